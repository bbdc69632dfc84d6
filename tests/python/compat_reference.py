#!/usr/bin/env python3
"""Compatibility harness: lcp against the reference ``LCPBinding`` of lollms-client.

The reference (``lollms_client.tools_bindings.lcp.LCPBinding``) discovers tools by
parsing Python files with ``ast``; lcp does the same statically in Rust.  This
script puts the two side by side.

Modes
-----
``reference [--folder DIR] [--out FILE]``
    Build the reference binding on its own shipped ``default_tools`` folder (found
    through the installed package, or ``--folder``), with every gate opened: each
    ``TOOL_LIBRARY_LOAD_FLAG`` a library declares is passed as a keyword argument and
    the office-family session flags are set.  No tool module is imported: the tools
    are read from ``discovered_tools`` (``discover_tools``/``list_tools`` would call
    the prompt providers, which imports the modules and runs ``init_tools_library``).
    Writes JSON ``{"folder", "tools": [{"name", "file", "line", "description",
    "parameters", "required", "regex_fallback"}], "shadowed", "stats", ...}`` in the
    reference's order; ``parameters`` is the reference's ``input_schema`` verbatim.

``compare --lcp MANIFEST.json [--reference REF.json | --folder DIR] [--strict]``
    Compare with ``lcp export --format manifest <folder>`` of the same folder: the
    tool name sets and, per tool, the parameter names and the required set.  Every
    difference is either *deliberate* -- its concrete cause is verified from the
    source with ``ast`` (never by a list of tool names) -- or *unexplained*.
    Deliberate causes carry a tag: ``diverges`` (SPEC marks it **(diverges)**) or
    ``spec-rule`` (an explicit SPEC rule the reference does not follow, without a
    **(diverges)** marker); ``--strict`` counts ``spec-rule`` as unexplained.
    Prints ``compat: N reference tools, M lcp tools, S same, X deliberate
    differences, D unexplained differences`` and one line per difference.

Exit status: 0 success, 1 unexplained differences (or a side with no tools),
2 usage or I/O error.  Standard library only, besides lollms_client.
"""

import argparse
import ast
import contextlib
import functools
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

# Parameter names the reference hides from the schema (LCPBinding line 252).
# The first two are meant for *args/**kwargs but match any parameter so named.
HOST_INJECTED = ("discussion_instance", "lollms_client_instance", "tool_context",
                 "user_interaction_handler")
REFERENCE_SKIPPED = ("args", "kwargs") + HOST_INJECTED
# Constructor keywords of LCPBinding that a load flag must never shadow.
CONSTRUCTOR_KEYWORDS = {"tools_folders", "tools_folder_path", "tool_files",
                        "host_tool_configs", "confirm_handler", "user_interaction_handler"}
PERSISTENT_MODULE_PREFIX = "lollms_client.tools_bindings.lcp.persistent_"


# --------------------------------------------------------------------------- AST

def _real(path):
    return os.path.realpath(str(path))


@functools.lru_cache(maxsize=None)
def source_tree(path):
    """Module AST as lcp reads the file (BOM allowed, newlines normalised), or None."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
        return ast.parse(text.replace("\r\n", "\n").replace("\r", "\n"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return None


@functools.lru_cache(maxsize=None)
def reference_parse_error(path):
    """Why the reference's own ``ast.parse`` (LCPBinding lines 123-124) fails, or None."""
    try:
        ast.parse(Path(path).read_text(encoding="utf-8"))
        return None
    except Exception as exc:  # the reference catches everything here too
        return f"{type(exc).__name__}: {exc}"


def iter_defs(node, scopes=()):
    """Yield ``(def_node, scopes)`` in source order; ``scopes`` names the enclosing
    ``def``/``class`` bodies (``if``/``try``/``with``/loops are transparent)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield child, scopes
            yield from iter_defs(child, scopes + (f"def {child.name}",))
        elif isinstance(child, ast.ClassDef):
            yield from iter_defs(child, scopes + (f"class {child.name}",))
        else:
            yield from iter_defs(child, scopes)


def locate_def(path, name, line):
    """The ``(node, scopes)`` of ``def name`` at ``line`` (its ``def`` or a decorator line)."""
    tree = source_tree(_real(path)) if line is not None else None
    if tree is None:
        return None
    for node, scopes in iter_defs(tree):
        lines = {node.lineno} | {d.lineno for d in node.decorator_list}
        if node.name == name and line in lines:
            return node, scopes
    return None


def module_level_def_names(path):
    tree = source_tree(_real(path))
    if tree is None:
        return set()
    return {node.name for node, scopes in iter_defs(tree) if not scopes}


def param_kinds(node):
    args = node.args
    kinds = {p.arg: "positional-only" for p in args.posonlyargs}
    kinds.update({p.arg: "regular" for p in args.args})
    kinds.update({p.arg: "keyword-only" for p in args.kwonlyargs})
    return kinds


def spec_file_order(folder):
    """Files in the order SPEC section 1 scans them (byte-wise sorted, X/X.py first)."""
    def visible(entry):
        return not entry.name.startswith(".") and entry.name != "__pycache__"

    def key(entry):
        return os.fsencode(entry.name)

    order = []
    for entry in sorted(filter(visible, os.scandir(folder)), key=key):
        if entry.is_dir():
            files = [f for f in sorted(os.scandir(entry.path), key=key)
                     if visible(f) and f.is_file() and f.name.endswith(".py")
                     and f.name != "__init__.py"]
            primary = [f for f in files if f.name == entry.name + ".py"]
            order += primary + [f for f in files if f not in primary]
        elif entry.name.endswith(".py") and entry.name != "__init__.py":
            order.append(entry)
    return [_real(f.path) for f in order]


# --------------------------------------------------------------------- reference

def _load_reference_module():
    import lollms_client.tools_bindings.lcp as lcp_module
    return lcp_module


def shipped_default_tools():
    return Path(_load_reference_module().__file__).resolve().parent / "default_tools"


def recording_binding_class():
    """LCPBinding subclass that only records what its own discovery sees."""
    base = _load_reference_module().LCPBinding

    class RecordingBinding(base):
        def _discover_local_tools(self):
            self.seen_files = []  # every file offered to _load_tool_file, in order
            self.parsed = []      # (file, candidate tool defs) of files past the gates
            super()._discover_local_tools()

        def _load_tool_file(self, py_file):
            self.seen_files.append(Path(py_file))
            return super()._load_tool_file(py_file)

        def _parse_tool_via_ast(self, py_file_path):
            found = super()._parse_tool_via_ast(py_file_path)
            self.parsed.append((Path(py_file_path), [dict(t) for t in found or []]))
            return found

        def _extract_single_tool_schema(self, func_node, file_stem):
            tool = super()._extract_single_tool_schema(func_node, file_stem)
            if tool is not None:
                tool["_compat_line"] = func_node.lineno
            return tool

    return RecordingBinding


def office_session_flags():
    lcp_module = _load_reference_module()
    gates = getattr(lcp_module, "_PER_SOFTWARE_GATES", {})
    flags = {"enable_office_files": True}
    flags.update({gate: True for names in gates.values() for gate in names})
    return flags


def open_binding(folder):
    """The reference binding on ``folder`` with every load flag and session flag on."""
    binding_class = recording_binding_class()
    with contextlib.redirect_stdout(sys.stderr):  # ASCIIColors logs to stdout
        probe = binding_class(tools_folders=[str(folder)])
        load_flags = {}
        for py_file in probe.seen_files:
            flag = probe._library_load_flag(py_file)
            if flag and flag not in CONSTRUCTOR_KEYWORDS:
                load_flags[flag] = True
        binding = binding_class(tools_folders=[str(folder)], **load_flags)
        binding.set_session_flags(office_session_flags())
    return binding, load_flags


def tool_record(tool):
    schema = tool.get("input_schema", {})
    return {
        "name": tool["name"],
        "file": _real(tool["_python_file_path"]),
        "line": tool.get("_compat_line"),
        "description": tool.get("description"),
        "parameters": schema,
        "required": list(schema.get("required", [])),
        "regex_fallback": bool(tool.get("_parsed_via_regex_fallback")),
    }


def candidate_records(binding):
    """Every tool definition the reference parsed, winners and shadowed alike."""
    records = []
    for py_file, tools in binding.parsed:
        for tool in tools:
            tool["_python_file_path"] = str(py_file)
            records.append(tool_record(tool))
    return records


def duplicates_and_shadowed(tools, candidates):
    winners = {t["name"]: (t["file"], t["line"]) for t in tools}
    by_name = {}
    for cand in candidates:
        sites = by_name.setdefault(cand["name"], [])
        if (cand["file"], cand["line"]) not in sites:
            sites.append((cand["file"], cand["line"]))
    shadowed = [dict(c, winner="%s:%s" % winners[c["name"]]) for c in candidates
                if c["name"] in winners and (c["file"], c["line"]) != winners[c["name"]]]
    duplicates = [{"name": name, "definitions": ["%s:%s" % s for s in sites],
                   "winner": "%s:%s" % winners[name]}
                  for name, sites in by_name.items() if len(sites) > 1 and name in winners]
    return duplicates, shadowed


def nested_tools(tools):
    nested = []
    for tool in tools:
        site = locate_def(tool["file"], tool["name"], tool["line"])
        if site and site[1]:
            nested.append({"name": tool["name"], "file": tool["file"],
                           "line": tool["line"], "inside": " > ".join(site[1])})
    return nested


def build_reference(folder):
    folder = Path(folder).resolve()
    binding, load_flags = open_binding(folder)
    tools = [tool_record(t) for t in binding.discovered_tools]
    seen = list(dict.fromkeys(_real(f) for f in binding.seen_files))
    duplicates, shadowed = duplicates_and_shadowed(tools, candidate_records(binding))
    failures = [{"file": f, "error": reference_parse_error(f)}
                for f in seen if reference_parse_error(f)]
    nested = nested_tools(tools)
    executed = sorted(m for m in sys.modules if m.startswith(PERSISTENT_MODULE_PREFIX))
    return {
        "reference": "lollms-client %s LCPBinding" % _lollms_version(),
        "python": sys.version.split()[0],
        "folder": str(folder),
        "load_flags": load_flags,
        "session_flags": dict(binding.session_flags),
        "files": seen,
        "tools": tools,
        "shadowed": shadowed,
        "stats": {
            "tools": len(tools),
            "files": len(seen),
            "libraries": len({Path(f).parent for f in seen}),
            "nested_tools": nested,
            "parse_failures": failures,
            "duplicate_names": duplicates,
            "executed_tool_modules": executed,
        },
    }


def _lollms_version():
    from importlib import metadata
    try:
        return metadata.version("lollms-client")
    except metadata.PackageNotFoundError:
        return "unknown"


def reference_summary(ref):
    stats = ref["stats"]
    return ("reference: %d tools from %d files (%d libraries); nested in def/class: %d; "
            "files failing to parse: %d; duplicate tool names: %d; tool modules executed: %d"
            % (stats["tools"], stats["files"], stats["libraries"], len(stats["nested_tools"]),
               len(stats["parse_failures"]), len(stats["duplicate_names"]),
               len(stats["executed_tool_modules"])))


# ----------------------------------------------------------------------- compare

@dataclass
class Difference:
    kind: str      # "diverges", "spec-rule" or "unexplained"
    tag: str       # short cause, e.g. "section 2 nested"
    tool: str
    message: str


def deliberate(kind, tag, tool, message):
    return Difference(kind, tag, tool, message)


def unexplained(tool, message):
    return Difference("unexplained", "", tool, message)


def lcp_warned_at(manifest, path, node):
    lines = {node.lineno} | {d.lineno for d in node.decorator_list}
    return any(_real(d.get("path", "")) == _real(path) and d.get("line") in lines
               for d in manifest.get("diagnostics", []))


def explain_reference_only(tool, manifest):
    """Why lcp does not export a tool the reference registered."""
    name, path = tool["name"], tool["file"]
    if tool["regex_fallback"] and reference_parse_error(path):
        if any(_real(d.get("path", "")) == _real(path) for d in manifest.get("diagnostics", [])):
            return deliberate("spec-rule", "section 2 unparsable file", name,
                              "%s does not parse (%s): the reference guessed the tool with its "
                              "regex fallback, lcp reports a diagnostic and exports nothing"
                              % (path, reference_parse_error(path)))
        return unexplained(name, "%s does not parse, but lcp has no diagnostic for it" % path)
    site = locate_def(path, name, tool["line"])
    if site and site[1] and name not in module_level_def_names(path):
        warned = (" (lcp warned)" if lcp_warned_at(manifest, path, site[0])
                  else " (no lcp warning found)")
        return deliberate("diverges", "section 2 nested", name,
                          "defined inside %s at %s:%s: the reference registers it, lcp does not "
                          "export it%s" % (" > ".join(site[1]), path, tool["line"], warned))
    if name.endswith("_prompt") and len(name) > len("tool__prompt"):
        base = name[len("tool_"):-len("_prompt")]
        if "tool_" + base in module_level_def_names(path) or base == Path(path).stem:
            role = ("library prompt" if base == Path(path).stem
                    else "prompt provider of tool_" + base)
            return deliberate("spec-rule", "section 2 prompt provider", name,
                              "%s in %s: never a tool in lcp (and in the reference's own docs), "
                              "the reference registers it anyway" % (role, path))
    hidden = [part for part in Path(path).parts if part.startswith(".")]
    if hidden:
        return deliberate("spec-rule", "section 1 hidden entry", name,
                          "%s lies under %s, which lcp skips" % (path, hidden[0]))
    return unexplained(name, "registered by the reference (%s:%s), missing from lcp"
                       % (path, tool["line"]))


def explain_lcp_only(tool, ref):
    """Why the reference lacks a tool lcp exports."""
    name, path, line = tool["name"], tool.get("path", ""), tool.get("line")
    site = locate_def(path, name, line)
    if site and isinstance(site[0], ast.AsyncFunctionDef) and not site[1]:
        return deliberate("spec-rule", "section 2 async def", name,
                          "async def at %s:%s: the reference only walks ast.FunctionDef"
                          % (path, line))
    error = reference_parse_error(path) if os.path.exists(path) else None
    if error and _real(path) in ref.get("files", []):
        return deliberate("spec-rule", "section 2 reference parse failure", name,
                          "the reference's Python cannot parse %s (%s); its regex fallback "
                          "missed the tool" % (path, error))
    return unexplained(name, "exported by lcp (%s:%s), unknown to the reference" % (path, line))


def explain_param(name, param, side, node):
    """Why ``param`` of tool ``name`` is only on ``side`` ("reference" or "lcp")."""
    kinds = param_kinds(node) if node is not None else {}
    if side == "lcp":
        kind = kinds.get(param)
        if kind in ("positional-only", "keyword-only"):
            return deliberate("spec-rule", "section 3 %s" % kind, name,
                              "%s parameter '%s': lcp includes it, the reference only reads "
                              "args.args" % (kind, param))
        if kind == "regular" and param in ("args", "kwargs"):
            return deliberate("spec-rule", "section 3 parameter named %s" % param, name,
                              "regular parameter '%s': only *args/**kwargs are dropped by lcp, "
                              "the reference drops the name" % param)
    elif node is not None and param not in kinds:
        real = [p for p, k in kinds.items() if k == "regular" and p not in REFERENCE_SKIPPED]
        if not real:
            return deliberate("spec-rule", "section 3 docstring-invented parameter", name,
                              "'%s' is not a parameter: the reference invents parameters from "
                              "docstring lines when the function has no regular one" % param)
    return unexplained(name, "parameter '%s' only in %s" % (param, side))


def lcp_parameters(tool):
    schema = tool.get("parameters") or {}
    return set((schema.get("properties") or {}).keys()), set(schema.get("required") or [])


def compare_schemas(name, ref_tool, lcp_tool):
    """Parameter-name and required-set differences of one tool present on both sides."""
    ref_params = set((ref_tool["parameters"].get("properties") or {}).keys())
    ref_required = set(ref_tool["required"])
    lcp_params, lcp_required = lcp_parameters(lcp_tool)
    error = reference_parse_error(ref_tool["file"]) if ref_tool["regex_fallback"] else None
    site = locate_def(lcp_tool.get("path", ""), name, lcp_tool.get("line"))
    node = site[0] if site else None
    diffs = []
    for side, params in (("reference", ref_params - lcp_params), ("lcp", lcp_params - ref_params)):
        for param in sorted(params):
            if error:
                diffs.append(deliberate("spec-rule", "section 2 reference parse failure", name,
                                        "parameter '%s' only in %s: the reference used its regex "
                                        "fallback (%s)" % (param, side, error)))
            else:
                diffs.append(explain_param(name, param, side, node))
    for param in sorted((ref_required ^ lcp_required) & ref_params & lcp_params):
        where = "reference" if param in ref_required else "lcp"
        diffs.append(unexplained(name, "parameter '%s' required only in %s" % (param, where)))
    return diffs


def explain_other_file(ref_tool, cand, ref, manifest):
    """The name is defined in two files and each side kept a different one."""
    name, ref_file, lcp_file = ref_tool["name"], ref_tool["file"], cand["file"]
    if ref_tool["regex_fallback"] and reference_parse_error(ref_file) and any(
            _real(d.get("path", "")) == ref_file for d in manifest.get("diagnostics", [])):
        return deliberate("spec-rule", "section 2 unparsable file", name,
                          "the reference kept a regex-fallback guess from unparsable %s, lcp "
                          "reports that file and keeps %s" % (ref_file, lcp_file))
    rank = {path: i for i, path in enumerate(spec_file_order(ref["folder"]))}
    if rank.get(lcp_file, len(rank)) < rank.get(ref_file, len(rank)):
        return deliberate("diverges", "section 1 order", name,
                          "defined in %s and %s: lcp keeps the first in sorted order, the "
                          "reference the first in directory order" % (ref_file, lcp_file))
    return unexplained(name, "lcp kept %s although %s comes first in sorted order"
                       % (lcp_file, ref_file))


def first_module_level_line(path, name):
    tree = source_tree(_real(path))
    lines = [node.lineno for node, scopes in (iter_defs(tree) if tree else ())
             if node.name == name and not scopes]
    return lines[0] if lines else None


def explain_winner(ref_tool, lcp_tool, ref, manifest):
    """lcp exported another definition of the same name: find it among the reference's
    shadowed candidates and say why the other one won.  Returns (difference, candidate)."""
    name, path, line = ref_tool["name"], _real(lcp_tool.get("path", "")), lcp_tool.get("line")
    site = locate_def(path, name, line)
    cand = next((c for c in ref.get("shadowed", []) if c["name"] == name and c["file"] == path
                 and (c["line"] is None or (site and site[0].lineno == c["line"]))), None)
    if cand is None:
        return unexplained(name, "lcp took it from %s:%s, the reference from %s:%s"
                           % (path, line, ref_tool["file"], ref_tool["line"])), None
    first = first_module_level_line(path, name)
    if site and first is not None and site[0].lineno != first:
        return unexplained(name, "lcp kept %s:%s, not the first module-level definition "
                           "(line %s)" % (path, line, first)), cand
    if cand["file"] != ref_tool["file"]:
        return explain_other_file(ref_tool, cand, ref, manifest), cand
    ref_site = locate_def(ref_tool["file"], name, ref_tool["line"])
    if ref_site and ref_site[1] and site and not site[1]:
        return deliberate("diverges", "section 2 nested", name,
                          "the reference kept the definition inside %s (line %s), lcp the "
                          "module-level one (line %s)"
                          % (" > ".join(ref_site[1]), ref_tool["line"], line)), cand
    return unexplained(name, "lcp kept %s:%s, the reference the earlier %s:%s"
                       % (path, line, ref_tool["file"], ref_tool["line"])), cand


def same_definition(ref_tool, lcp_tool):
    if _real(lcp_tool.get("path", "")) != ref_tool["file"]:
        return False
    if ref_tool["line"] is None or lcp_tool.get("line") is None:
        return True
    site = locate_def(ref_tool["file"], ref_tool["name"], lcp_tool.get("line"))
    return site is not None and site[0].lineno == ref_tool["line"]


def compare_tool(ref_tool, lcp_tool, ref, manifest):
    if same_definition(ref_tool, lcp_tool):
        return compare_schemas(ref_tool["name"], ref_tool, lcp_tool)
    diff, candidate = explain_winner(ref_tool, lcp_tool, ref, manifest)
    if candidate is None:
        return [diff]
    return [diff] + compare_schemas(ref_tool["name"], candidate, lcp_tool)


def compare_order(ref, lcp_tools, common):
    """lcp must keep either the reference's order or SPEC's sorted one."""
    ref_order = [t["name"] for t in ref["tools"] if t["name"] in common]
    lcp_order = [t["name"] for t in lcp_tools if t["name"] in common]
    if ref_order == lcp_order:
        return []
    rank = {path: i for i, path in enumerate(spec_file_order(ref["folder"]))}
    expected = sorted(lcp_tools, key=lambda t: (rank.get(_real(t.get("path", "")), len(rank)),
                                                t.get("line") or 0))
    if [t["name"] for t in expected] == [t["name"] for t in lcp_tools]:
        return [deliberate("diverges", "section 1 order", "*",
                           "tool order differs: lcp scans entries byte-wise sorted, the "
                           "reference in directory order")]
    return [unexplained("*", "lcp order follows neither the reference nor SPEC section 1")]


def compare(ref, manifest):
    ref_tools = {t["name"]: t for t in ref["tools"]}
    lcp_list = manifest.get("tools", [])
    lcp_tools, diffs = {}, []
    for tool in lcp_list:
        if tool["name"] in lcp_tools:
            diffs.append(unexplained(tool["name"], "exported twice by lcp"))
        lcp_tools.setdefault(tool["name"], tool)
    same = 0
    for name, ref_tool in ref_tools.items():
        if name not in lcp_tools:
            diffs.append(explain_reference_only(ref_tool, manifest))
            continue
        tool_diffs = compare_tool(ref_tool, lcp_tools[name], ref, manifest)
        same += not tool_diffs
        diffs += tool_diffs
    for name, tool in lcp_tools.items():
        if name not in ref_tools:
            diffs.append(explain_lcp_only(tool, ref))
    diffs += compare_order(ref, lcp_list, set(ref_tools) & set(lcp_tools))
    return same, diffs


def render(ref, manifest, same, diffs, strict):
    counted_ok = {"diverges"} if strict else {"diverges", "spec-rule"}
    ok = [d for d in diffs if d.kind in counted_ok]
    bad = [d for d in diffs if d.kind not in counted_ok]
    lines = ["compat: %d reference tools, %d lcp tools, %d same, %d deliberate differences, "
             "%d unexplained differences" % (len(ref["tools"]), len(manifest.get("tools", [])),
                                             same, len(ok), len(bad))]
    for diff in bad + ok:
        label = "deliberate" if diff in ok else "UNEXPLAINED"
        tag = " [%s: %s]" % (diff.kind, diff.tag) if diff.tag else ""
        lines.append("%s%s %s: %s" % (label, tag, diff.tool, diff.message))
    return "\n".join(lines), len(bad)


# --------------------------------------------------------------------------- CLI

def read_json(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def run_reference(args):
    ref = build_reference(args.folder or shipped_default_tools())
    text = json.dumps(ref, indent=2, ensure_ascii=False) + "\n"
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    print(reference_summary(ref), file=sys.stderr)
    return 0 if ref["tools"] else 1


def run_compare(args):
    manifest = read_json(args.lcp)
    if args.reference:
        ref = read_json(args.reference)
    else:
        ref = build_reference(args.folder or shipped_default_tools())
    same, diffs = compare(ref, manifest)
    text, unexplained_count = render(ref, manifest, same, diffs, args.strict)
    print(text)
    empty = not ref["tools"] or not manifest.get("tools")
    return 1 if unexplained_count or empty else 0


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    modes = parser.add_subparsers(dest="mode", required=True)
    ref = modes.add_parser("reference", help="dump the reference binding's tool schemas")
    ref.add_argument("--folder", help="tools folder (default: the shipped default_tools)")
    ref.add_argument("--out", help="write the JSON here instead of stdout")
    cmp_ = modes.add_parser("compare", help="compare an lcp manifest with the reference")
    cmp_.add_argument("--lcp", required=True, help="output of `lcp export --format manifest`")
    cmp_.add_argument("--reference", help="JSON from the reference mode (default: build it now)")
    cmp_.add_argument("--folder", help="tools folder to build the reference on when "
                      "--reference is absent (default: the shipped default_tools)")
    cmp_.add_argument("--strict", action="store_true",
                      help="count spec-rule differences (no (diverges) marker) as unexplained")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    try:
        return run_reference(args) if args.mode == "reference" else run_compare(args)
    except (OSError, ValueError, KeyError) as exc:
        print("compat_reference: %s" % exc, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
