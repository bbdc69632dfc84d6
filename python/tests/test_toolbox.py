"""lcp_tools.Toolbox (SPEC §19): discovery and export without importing a tool, calls in
sandboxed workers of this interpreter, host callables called back in this process."""

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lcp_tools
from conftest import FIXTURES


@pytest.fixture
def crashy():
    with lcp_tools.Toolbox(FIXTURES / "crashy") as toolbox:
        yield toolbox


@pytest.fixture
def handlers():
    with lcp_tools.Toolbox(FIXTURES / "handlers") as toolbox:
        yield toolbox


def _fixture_modules():
    fixtures = str(FIXTURES)
    return {name for name, m in list(sys.modules.items()) if (getattr(m, "__file__", None) or "").startswith(fixtures)}


def test_tools_are_read_without_importing_them(handlers):
    before = _fixture_modules()
    names = [tool["name"] for tool in handlers.tools()]
    assert "tool_guarded_action" in names
    # A prompt provider is not a tool; a parameter named `args` is a parameter.
    assert "tool_handlers_prompt" not in names
    with_args = next(t for t in handlers.tools() if t["name"] == "tool_with_args")
    assert set(with_args["parameters"]["properties"]) == {"args", "value"}
    handlers.export("openai")
    assert _fixture_modules() == before


def test_export_is_the_json_of_lcp_export(handlers):
    lcp = Path(sys.executable).parent / "lcp"
    for format in ("openai", "anthropic", "mcp"):
        printed = subprocess.run(
            [str(lcp), "export", "--format", format, str(FIXTURES / "handlers")],
            capture_output=True, text=True, check=True,
        ).stdout
        assert handlers.export(format) == json.loads(printed)
    assert handlers.export("openai", strict=True)[0]["function"]["strict"] is True
    with pytest.raises(ValueError):
        handlers.export("yaml")


def test_an_in_process_toolbox_claims_no_enforcement_in_its_listing(tmp_path):
    (tmp_path / "reader.py").write_text(
        'TOOL_POLICY = {"read_only": True, "open_world": False}\n\n\n'
        'def tool_peek(path: str) -> str:\n    """Read a file."""\n    return path\n'
    )
    def meta(toolbox):
        return toolbox.export("mcp")["tools"][0]["_meta"]

    with lcp_tools.Toolbox(tmp_path, in_process=True) as toolbox:
        assert "lcp/enforced" not in meta(toolbox)
    lcp = Path(sys.executable).parent / "lcp"
    printed = subprocess.run(
        [str(lcp), "export", "--format", "mcp", str(tmp_path)], capture_output=True, text=True, check=True
    ).stdout
    # Sandboxed workers: what the kernel keeps, as `lcp export` says.
    with lcp_tools.Toolbox(tmp_path) as toolbox:
        assert meta(toolbox).get("lcp/enforced") == json.loads(printed)["tools"][0]["_meta"].get("lcp/enforced")


def test_check_counts_and_diagnostics(handlers):
    report = handlers.check()
    assert report["tools"] == len(handlers.tools())
    assert report["errors"] == 0


def test_a_call_returns_its_value_and_outcome(handlers, workspace):
    result = handlers.call("tool_shapes", {"kind": "list", "count": 3})
    assert (result.outcome, result.ok, result.output) == ("returned", True, [0, 1, 2])


def test_a_raising_tool_is_a_result_with_its_traceback(handlers, workspace):
    result = handlers.call("tool_boom", {"message": "bad"})
    assert result.outcome == "raised" and not result.ok
    assert result.error == "RuntimeError: bad"
    assert "tool_boom" in result.traceback


def test_invalid_arguments_and_unknown_tools_are_refused(handlers):
    assert handlers.call("tool_shapes", {"kind": 3}).outcome == "refused"
    assert handlers.call("tool_nope").outcome == "refused"


def test_tools_run_in_this_interpreter_in_another_process(crashy, workspace):
    where = crashy.call("tool_which").output
    assert os.path.samefile(where["executable"], sys.executable)
    assert os.path.samefile(where["prefix"], sys.prefix)
    assert where["pid"] != os.getpid()


@pytest.mark.parametrize("tool, cause", [("tool_segfault", "SIGSEGV"), ("tool_exit", "status 3")])
def test_a_tool_that_ends_its_process_leaves_the_host_running(crashy, workspace, tool, cause):
    result = crashy.call(tool)
    assert result.outcome == "died" and cause in result.error
    # The next call gets a new worker.
    assert crashy.call("tool_which").ok


def test_a_tool_that_hangs_past_its_timeout_is_stopped(crashy, workspace):
    result = crashy.call("tool_hang", {"seconds": 60}, timeout=0.5)
    assert result.outcome == "timed_out"
    assert crashy.call("tool_hang", {"seconds": 0}).output == "slept"


def test_confirm_runs_the_host_callable_here_with_the_tools_arguments(handlers, workspace):
    asked = []

    def confirm(request):
        asked.append((os.getpid(), request["args"]))
        return ("allow", "fine")

    result = handlers.call("tool_guarded_action", {"action": "deploy"}, confirm=confirm)
    assert result.output == {"success": True, "output": "did deploy", "reason": "fine"}
    assert asked == [(os.getpid(), ["deploy", "Guarded action"])]
    refused = handlers.call("tool_guarded_action", {"action": "deploy"}, confirm=lambda request: False)
    assert refused.outcome == "reported"


def test_ask_progress_and_log(handlers, workspace):
    result = handlers.call("tool_ask_name", {"question": "Who?"}, ask=lambda request: f"asked {request['prompt']}")
    assert result.output["output"] == {"answer": "asked Who?"}
    declined = handlers.call("tool_ask_name", {}, ask=lambda request: None)
    assert declined.output["output"] == {"answer": None}


def test_acall_awaits_without_blocking_the_loop(handlers, workspace):
    async def both():
        return await asyncio.gather(
            handlers.acall("tool_shapes", {"kind": "plain"}),
            handlers.acall("tool_shapes", {"kind": "plain", "count": 5}),
        )

    first, second = asyncio.run(both())
    assert (first.output, second.output) == ("plain:2:0.5", "plain:5:0.5")


def test_console_script_has_every_command():
    lcp = Path(sys.executable).parent / "lcp"
    printed = subprocess.run([str(lcp), "--help"], capture_output=True, text=True, check=True).stdout
    for command in ("list", "export", "check", "call", "serve", "test"):
        assert command in printed
    called = subprocess.run(
        [str(lcp), "call", "tool_shapes", str(FIXTURES / "handlers"), "--args", '{"kind": "plain"}'],
        capture_output=True, text=True,
    )
    assert json.loads(called.stdout)["output"] == "plain:2:0.5", called.stderr


def test_the_package_is_typed():
    package = Path(lcp_tools.__file__).parent
    assert (package / "py.typed").is_file()
    assert (package / "_lcp.pyi").is_file()


def test_an_import_error_names_the_interpreter_and_how_to_choose_another(workspace):
    with lcp_tools.Toolbox(FIXTURES / "needs_pkg") as toolbox:
        result = toolbox.call("tool_package_answer")
    assert result.outcome == "raised"
    assert "No module named 'lcp_fixture_package'" in result.error
    assert os.path.abspath(sys.executable) in result.error
    assert "--venv" in result.error and "venv=" in result.error


def test_a_venv_given_adds_its_packages(tmp_path, workspace):
    venv = tmp_path / "venv"
    site = venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    (site / "lcp_fixture_package").mkdir(parents=True)
    (site / "lcp_fixture_package" / "__init__.py").write_text("ANSWER = 42\n")
    (venv / "pyvenv.cfg").write_text(f"home = {os.path.dirname(sys.executable)}\n")
    with lcp_tools.Toolbox(FIXTURES / "needs_pkg", venv=venv) as toolbox:
        assert toolbox.call("tool_package_answer").output == 42


def test_serve_speaks_mcp_over_stdio(tmp_path):
    script = f"import lcp_tools, sys; sys.exit(lcp_tools.Toolbox({str(FIXTURES / 'handlers')!r}).serve())"
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "tool_shapes", "arguments": {"kind": "plain"}}},
    ]
    server = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    replies = {}
    try:
        for message in messages:
            server.stdin.write(json.dumps(message) + "\n")
            server.stdin.flush()
            if "id" in message:
                while True:
                    reply = json.loads(server.stdout.readline())
                    if reply.get("id") == message["id"]:
                        replies[message["id"]] = reply
                        break
    finally:
        server.stdin.close()
        server.wait(timeout=30)
        server.stdout.close()
        server.stderr.close()
    names = {tool["name"] for tool in replies[2]["result"]["tools"]}
    assert "tool_guarded_action" in names
    assert "plain:2:0.5" in json.dumps(replies[3]["result"])


def test_a_config_python_venv_adds_its_packages(tmp_path, workspace):
    venv = tmp_path / "envs" / "tools"
    site = venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    (site / "lcp_fixture_package").mkdir(parents=True)
    (site / "lcp_fixture_package" / "__init__.py").write_text("ANSWER = 7\n")
    (venv / "pyvenv.cfg").write_text(f"home = {os.path.dirname(sys.executable)}\n")
    config = tmp_path / "lcp.toml"
    config.write_text('[python]\nvenv = "envs/tools"\n')
    with lcp_tools.Toolbox(FIXTURES / "needs_pkg", config=config) as toolbox:
        assert toolbox.call("tool_package_answer").output == 7


def test_generate_answers_the_tools_model_requests(handlers, workspace):
    result = handlers.call("tool_shout", {"text": "hey"}, generate=lambda request: request["prompt"] * 2)
    assert result.output["output"] == "heyhey"
