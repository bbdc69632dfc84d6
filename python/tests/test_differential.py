"""The same scenarios against lollms-client 1.21.1's LCPBinding and lcp_tools'
(skipped without lollms-client): same tools, descriptions, parameters, results and
handler calls, except where the LCP contract says otherwise (SPEC §3, §19)."""

import os
import re

import pytest

import lcp_tools
from conftest import FIXTURES

reference = pytest.importorskip("lollms_client.tools_bindings.lcp")


def _same_text(a, b):
    # SPEC §3: a description's lines are joined with single spaces.
    return " ".join(a.split()) == " ".join(b.split())


def _exact(schema):
    """The reference's word for lcp's exact type (`Optional[T]` is `anyOf [T, null]`)."""
    kinds = [s.get("type") for s in schema.get("anyOf", []) if s.get("type") != "null"]
    return kinds[0] if len(kinds) == 1 else schema.get("type")


def _compare_listing(folder):
    ours_binding = lcp_tools.LCPBinding(tools_folders=folder)
    try:
        ref = {t["name"]: t for t in reference.LCPBinding(tools_folders=folder).list_tools()}
        ours = {t["name"]: t for t in ours_binding.list_tools()}
    finally:
        ours_binding.close()
    # SPEC §19: `tool_<x>_prompt` functions are prompt providers, never tools.
    providers = {n for n in ref if n.endswith("_prompt")}
    assert set(ref) - providers == set(ours)
    for name, tool in ours.items():
        theirs = ref[name]
        assert _same_text(tool["description"], theirs["description"]), (name, tool["description"], theirs["description"])
        schema, their_schema = tool["input_schema"], theirs["input_schema"]
        assert schema["required"] == [r for r in their_schema["required"]] or "args" in schema["properties"], name
        for parameter, their in their_schema["properties"].items():
            mine = schema["properties"][parameter]
            if their["type"] in ("string", "integer", "number", "boolean") and "type" in mine or "anyOf" in mine:
                assert _exact(mine) in (their["type"], None), (name, parameter)
            if "default" in mine:
                assert mine["default"] == their.get("default"), (name, parameter)
    return ours


def test_the_reference_default_libraries_list_the_same_tools(reference_default_tools):
    ours = _compare_listing(reference_default_tools)
    assert len(ours) > 60


def test_a_fixture_folder_lists_the_same_tools():
    _compare_listing(FIXTURES / "handlers")


SCENARIOS = [
    ("tool_guarded_action", {"action": "deploy"}),
    ("tool_ask_name", {}),
    ("tool_shapes", {"kind": "plain"}),
    ("tool_shapes", {"kind": "list", "count": 3}),
    ("tool_shapes", {"kind": "status_error"}),
    ("tool_shapes", {"kind": "payload", "tags": ["a"]}),
    ("tool_shapes", {"kind": "images"}),
    ("tool_shapes", {"kind": "context"}),
    ("tool_shapes", {"kind": "empty"}),
    ("tool_shapes", {"kind": "none"}),
    ("tool_shapes", {"kind": "plain", "unknown": 1}),
    ("tool_boom", {"message": "bad"}),
    ("tool_nope", {}),
    ("tool_keywords", {"name": "n", "colour": "red"}),
]


def _run(cls, workspace):
    calls = []

    def confirm(*args, **kwargs):
        calls.append(("confirm", args, kwargs))
        return ("allow", "ok by host")

    def ask(request):
        calls.append(("ask", request))
        return "Ada"

    binding = cls(tools_folders=str(FIXTURES / "handlers"), confirm_handler=confirm, user_interaction_handler=ask)
    results = []
    for name, params in SCENARIOS:
        result = binding.execute_tool(name, dict(params))
        result.pop("traceback", None)
        results.append(result)
    if hasattr(binding, "close"):
        binding.close()
    return results, calls


def test_same_results_and_handler_calls(workspace):
    ref_results, ref_calls = _run(reference.LCPBinding, workspace)
    our_results, our_calls = _run(lcp_tools.LCPBinding, workspace)
    assert our_results == ref_results
    assert our_calls == ref_calls
