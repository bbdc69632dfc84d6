"""lcp_tools.LCPBinding as lollms code uses lollms-client 1.21.1's (SPEC §19)."""

import gc
import os
import tempfile
from pathlib import Path

import pytest

import lcp_tools
from conftest import FIXTURES
from lcp_tools import binding as binding_module

HANDLERS = FIXTURES / "handlers"


@pytest.fixture
def make():
    made = []

    def make(**kwargs):
        made.append(lcp_tools.LCPBinding(**kwargs))
        return made[-1]

    yield make
    for binding in made:
        binding.close()


def test_module_attribute_and_base_class():
    assert binding_module.BindingName == "LCPBinding" == lcp_tools.BindingName
    try:
        from lollms_client.lollms_tools_binding import LollmsToolBinding
    except ImportError:
        return
    assert issubclass(lcp_tools.LCPBinding, LollmsToolBinding)


@pytest.mark.parametrize("keyword", ["tools_folders", "tools_folder_path"])
@pytest.mark.parametrize("kind", [str, Path, lambda p: [p]])
def test_folder_keywords(make, keyword, kind):
    binding = make(**{keyword: kind(HANDLERS)})
    assert "tool_guarded_action" in {t["name"] for t in binding.list_tools()}


def test_tool_files_imply_no_folder_scan(make):
    binding = make(tool_files=[str(FIXTURES / "crashy" / "crashy.py")])
    assert binding.tools_folders == []
    assert {t["name"] for t in binding.list_tools()} >= {"tool_segfault", "tool_which"}
    assert "tool_guarded_action" not in {t["name"] for t in binding.list_tools()}


def test_discovered_tool_shape(make):
    binding = make(tools_folders=HANDLERS)
    tool = next(t for t in binding.discover_tools() if t["name"] == "tool_shapes")
    assert tool["description"] == "Returns values of several shapes."
    assert tool["input_schema"]["required"] == ["kind"]
    assert tool["input_schema"]["properties"]["count"] == {"type": "integer", "description": "How many.", "default": 2}
    assert tool["_python_file_path"] == str((HANDLERS / "handlers.py").resolve())
    assert binding.discover_tools(specific_tool_names=["tool_boom"])[0]["name"] == "tool_boom"


def test_chat_tool_specs(make, workspace):
    binding = make(tools_folders=HANDLERS)
    specs = binding.to_chat_tool_specs()
    spec = specs["tool_shapes"]
    assert [p["name"] for p in spec["parameters"]] == ["kind", "count", "ratio", "tags"]
    assert spec["parameters"][1] == {"name": "count", "type": "int", "description": "How many.", "optional": True, "default": 2}
    assert spec["callable"](kind="list", count=2)["output"] == [0, 1]


def test_execute_tool_shapes(make, workspace):
    binding = make(tools_folders=HANDLERS)
    assert binding.execute_tool("tool_shapes", {"kind": "plain"}) == {"output": "plain:2:0.5", "status_code": 200, "success": True}
    assert binding.execute_tool("tool_nope", {}) == {"error": "Tool 'tool_nope' not found.", "status_code": 404}
    images = binding.execute_tool("tool_shapes", {"kind": "images"})
    assert images["image_b64"] == "aGk=" and images["prompt_injection"] == "look"
    context = binding.execute_tool("tool_shapes", {"kind": "context"})
    assert context["context_files"] == [str((workspace / "context.txt").resolve())]
    failed = binding.execute_tool("tool_shapes", {"kind": "status_error"})
    assert failed == {"output": "Tool executed successfully.", "error": "it went wrong", "success": False, "status_code": 500}
    crashed = binding.execute_tool("tool_boom", {"message": "bad"})
    assert crashed["error"] == "Tool 'tool_boom' crashed: bad" and crashed["status_code"] == 500
    assert "RuntimeError: bad" in crashed["traceback"]


def test_a_crash_or_a_hang_is_a_result_and_the_host_lives(make, workspace):
    binding = make(tools_folders=FIXTURES / "crashy", timeout=0.5)
    crashed = binding.execute_tool("tool_segfault", {})
    assert crashed["success"] is False and crashed["outcome"] == "died" and "SIGSEGV" in crashed["error"]
    hung = binding.execute_tool("tool_hang", {"seconds": 30})
    assert hung["outcome"] == "timed_out" and hung["status_code"] == 500
    assert binding.execute_tool("tool_which", {})["success"] is True


def test_confirm_handler_reaches_the_tool_and_runs_here(make, workspace):
    asked = []

    def confirm(content, label):
        asked.append((os.getpid(), content, label))
        return ("allow", "approved")

    binding = make(tools_folders=HANDLERS)
    without = binding.execute_tool("tool_guarded_action", {"action": "deploy"})
    assert without["success"] is False
    binding.set_confirm_handler(confirm)
    with_handler = binding.execute_tool("tool_guarded_action", {"action": "deploy"})
    assert with_handler == {"output": "did deploy", "status_code": 200, "success": True}
    assert asked == [(os.getpid(), "deploy", "Guarded action")]


def test_user_interaction_handler(make, workspace):
    binding = make(tools_folders=HANDLERS, user_interaction_handler=lambda request: f"{request['title']}!")
    assert binding.execute_tool("tool_ask_name", {})["output"] == {"answer": "Name!"}


def test_each_library_gets_its_own_autonomy_level(make, workspace, tmp_path):
    other = tmp_path / "other.py"
    other.write_text(
        "LEVEL = None\n"
        "def init_tools_library(config):\n    global LEVEL\n    LEVEL = config.get('autonomy_level')\n"
        "def tool_other_level() -> str:\n    \"\"\"Its level.\"\"\"\n    return LEVEL\n"
    )
    binding = make(tools_folders=HANDLERS, tool_files=[other],
                   host_tool_configs={"handlers": {"autonomy_level": "full_access"}, "other": {"autonomy_level": "strict"}})
    assert binding.execute_tool("tool_library_config", {})["output"]["autonomy"] == "full_access"
    assert binding.execute_tool("tool_other_level", {})["output"] == "strict"


def test_host_tool_configs_and_autonomy(make, workspace):
    binding = make(tools_folders=HANDLERS, host_tool_configs={"handlers": {"color": "blue", "autonomy_level": "full_access"}})
    config = binding.execute_tool("tool_library_config", {})["output"]
    assert config["config"]["color"] == "blue" and config["autonomy"] == "full_access"
    assert binding.execute_tool("tool_guarded_action", {"action": "x"})["output"] == "did x without asking"


def test_prompt_providers_are_not_tools_and_args_is_a_parameter(make):
    binding = make(tools_folders=HANDLERS)
    names = {t["name"] for t in binding.list_tools()}
    assert "tool_handlers_prompt" not in names
    with_args = next(t for t in binding.list_tools() if t["name"] == "tool_with_args")
    assert with_args["input_schema"]["required"] == ["args"]


def test_dynamic_registration_and_prefix_removal(make, workspace):
    binding = make(tools_folders=HANDLERS)
    code = 'def tool_dyn_echo(text: str) -> str:\n    """Echoes."""\n    return text\n'
    assert binding.register_tool_from_code("dyn", code)
    assert binding.execute_tool("tool_dyn_echo", {"text": "hi"})["output"] == "hi"
    assert binding.unregister_tools_by_prefix("dyn") == 1
    assert binding.execute_tool("tool_dyn_echo", {"text": "hi"})["status_code"] == 404


def test_the_folder_of_tools_registered_from_code_goes_with_the_binding():
    def folders() -> set:
        return set(Path(tempfile.gettempdir()).glob("lcp_dynamic_tools_*"))

    before = folders()
    binding = lcp_tools.LCPBinding(tools_folders=HANDLERS)
    assert binding.register_tool_from_code("dyn", 'def tool_dyn_echo(text: str) -> str:\n    """Echoes."""\n    return text\n')
    assert binding.execute_tool("tool_dyn_echo", {"text": "hi"})["output"] == "hi"
    made = folders() - before
    assert len(made) == 1 and (made.pop() / "dyn.py").is_file()
    binding.close()
    del binding
    gc.collect()
    assert folders() - before == set(), "the folder of the tools registered from code outlived its binding"


def test_library_lookup_and_mount(make, tmp_path):
    library = tmp_path / "tools" / "greeter"
    library.mkdir(parents=True)
    (library / "greeter.py").write_text('TOOL_LIBRARY_NAME = "Friendly Greeter"\n\ndef tool_greet(name: str) -> str:\n    """Greets."""\n    return name\n')
    binding = make(tools_folders=HANDLERS)
    binding.tools_folders.append(tmp_path / "tools")
    assert binding.find_library_for_tool("tool_greet") == "greeter"
    assert binding.is_tool_available("tool_greet")
    assert not binding.is_library_mounted("greeter")
    assert binding.mount_tool_library("Friendly Greeter")
    assert binding.is_library_mounted("greeter")
    assert "tool_greet" in {t["name"] for t in binding.list_tools()}


class _Client:
    """A host's lollms client, as far as a tool's generate_text goes."""

    def __init__(self):
        self.asked = []

    def generate_text(self, prompt, **options):
        self.asked.append((os.getpid(), prompt, options))
        return prompt.upper()


def test_the_hosts_client_answers_generate_text_here(make, workspace):
    client = _Client()
    binding = make(tools_folders=HANDLERS)
    assert binding.execute_tool("tool_shout", {"text": "hi"}, lollms_client_instance=client)["output"] == "HI"
    assert client.asked == [(os.getpid(), "hi", {"n_predict": 5})]
    specs = binding.to_chat_tool_specs()
    assert [p["name"] for p in specs["tool_shout"]["parameters"]] == ["text"]
    assert specs["tool_shout"]["callable"](text="yo", lollms_client_instance=client)["output"] == "YO"


def test_without_lollms_client_the_binding_stands_alone(tmp_path):
    import subprocess
    import sys

    script = (
        "import sys, json\n"
        "sys.modules['lollms_client'] = None\n"
        "import lcp_tools\n"
        "b = lcp_tools.LCPBinding()\n"
        "specs = b.to_chat_tool_specs()\n"
        "r = specs['tool_text_statistics']['callable'](text='a b c')\n"
        "b.close()\n"
        "print(json.dumps([type(b).__mro__[1].__name__, r['success'], r['output']['words']]))\n"
    )
    printed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.split("\n")[-2] == '["_StandaloneToolBinding", true, 3]'
