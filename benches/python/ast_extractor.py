#!/usr/bin/env python3
"""A minimal CPython tool extractor with the stdlib ``ast`` module: the bench's
"what would a small Python script cost" contender.

It does the same work as ``lcp check`` on the bench corpus, single-threaded: the
folder walk (sorted, ``X/X.py`` first, then its siblings; dot entries, ``__pycache__``
and ``__init__.py`` skipped), reading and parsing every file, the module-scope walk
(top level and module-level ``if``/``try``/``with`` bodies), imports, same-file
``Enum`` and ``@dataclass`` classes, ``TOOL_LIBRARY_*`` metadata, and per ``tool_*``
function a JSON Schema from annotations (``Optional``, unions, ``Literal``,
``list``/``dict``/``tuple``, ``Path``, enums, dataclasses), literal defaults, and the
Google / NumPy / reST parameter descriptions of the docstring.

Usage: ``ast_extractor.py FOLDER [--out FILE] [--print]``.  Writes
``{"discover_s", "libraries", "tools"}`` as JSON to ``--out`` (else stdout);
``--print`` also writes the tools as JSON to stdout.  Standard library only.
"""

import ast
import json
import os
import re
import sys
import time

INJECTED = {"discussion_instance", "lollms_client_instance", "tool_context", "user_interaction_handler"}
SCALARS = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "Path": "string",
           "bytes": "string"}


def discover(folder):
    def visible(name):
        return not name.startswith(".") and name != "__pycache__"

    def is_py(name):
        return name.endswith(".py") and name != "__init__.py"

    files = []
    for entry in sorted((e for e in os.scandir(folder) if visible(e.name)), key=lambda e: os.fsencode(e.name)):
        if entry.is_dir():
            names = sorted((f.name for f in os.scandir(entry.path) if visible(f.name) and f.is_file() and is_py(f.name)),
                           key=os.fsencode)
            primary = entry.name + ".py"
            ordered = ([primary] if primary in names else []) + [n for n in names if n != primary]
            files += [(os.path.join(entry.path, n), entry.path) for n in ordered]
        elif is_py(entry.name):
            files.append((entry.path, None))
    return files


def module_scope(body, scope):
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope["functions"].append(stmt)
        elif isinstance(stmt, ast.ClassDef):
            scope["classes"].setdefault(stmt.name, stmt)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                scope["imports"].setdefault(alias.asname or alias.name.split(".")[0], alias.name)
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                scope["imports"].setdefault(alias.asname or alias.name, "%s.%s" % (stmt.module, alias.name))
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            if name.startswith("TOOL_LIBRARY_") and isinstance(stmt.value, ast.Constant):
                scope["metadata"].setdefault(name, stmt.value.value)
        elif isinstance(stmt, ast.If):
            module_scope(stmt.body, scope)
            module_scope(stmt.orelse, scope)
        elif isinstance(stmt, ast.Try):
            for part in (stmt.body, stmt.orelse, stmt.finalbody):
                module_scope(part, scope)
            for handler in stmt.handlers:
                module_scope(handler.body, scope)
        elif isinstance(stmt, ast.With):
            module_scope(stmt.body, scope)


def qualified(node, scope):
    if isinstance(node, ast.Name):
        return scope["imports"].get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        return qualified(node.value, scope) + "." + node.attr
    return None


def class_kind(cls):
    for deco in cls.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if (isinstance(target, ast.Name) and target.id == "dataclass") or \
                (isinstance(target, ast.Attribute) and target.attr == "dataclass"):
            return "dataclass"
    for base in cls.bases:
        name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")
        if name.endswith("Enum"):
            return "enum"
    return "plain"


def literal(node):
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def schema_of(node, scope, defs):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return {}
    if isinstance(node, ast.Constant) and node.value is None:
        return {"type": "null"}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return union([schema_of(node.left, scope, defs), schema_of(node.right, scope, defs)])
    if isinstance(node, ast.Subscript):
        base = (qualified(node.value, scope) or "").split(".")[-1]
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if base == "Optional":
            return union([schema_of(args[0], scope, defs), {"type": "null"}])
        if base == "Union":
            return union([schema_of(a, scope, defs) for a in args])
        if base == "Literal":
            values = [a.value for a in args if isinstance(a, ast.Constant)]
            kinds = {type(v).__name__ for v in values}
            out = {"enum": values}
            if len(kinds) == 1:
                out["type"] = SCALARS.get(kinds.pop(), "string")
            return out
        if base in ("list", "List", "Sequence", "Iterable", "set", "Set"):
            return {"type": "array", "items": schema_of(args[0], scope, defs)}
        if base in ("dict", "Dict", "Mapping"):
            return {"type": "object", "additionalProperties": schema_of(args[-1], scope, defs)}
        if base in ("tuple", "Tuple"):
            return {"type": "array", "prefixItems": [schema_of(a, scope, defs) for a in args]}
        return {}
    name = qualified(node, scope)
    if name is None:
        return {}
    short = name.split(".")[-1]
    if short in SCALARS:
        return {"type": SCALARS[short]}
    if short in ("Any", "object"):
        return {}
    if short in ("list", "List"):
        return {"type": "array"}
    if short in ("dict", "Dict"):
        return {"type": "object"}
    cls = scope["classes"].get(name)
    if cls is not None:
        kind = class_kind(cls)
        if kind == "enum":
            values = [s.value.value for s in cls.body
                      if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant)]
            return {"type": "string", "enum": values}
        if kind == "dataclass":
            if name not in defs:
                defs[name] = None
                props, required = {}, []
                for stmt in cls.body:
                    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                        props[stmt.target.id] = schema_of(stmt.annotation, scope, defs)
                        if stmt.value is None:
                            required.append(stmt.target.id)
                defs[name] = {"type": "object", "properties": props, "required": required}
            return {"$ref": "#/$defs/" + name}
    return {}


def union(members):
    flat = []
    for m in members:
        flat += m["anyOf"] if list(m) == ["anyOf"] else [m]
    return {"anyOf": flat}


PARAM_LINE = re.compile(r"^\s{4,}(\*{0,2}\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
REST_PARAM = re.compile(r"^\s*:param\s+(?:\w+\s+)?(\w+):\s*(.*)$")
NUMPY_PARAM = re.compile(r"^(\w+)\s*:\s*(.*)$")


def docstring(raw):
    """Summary and parameter descriptions of a Google, NumPy or reST docstring."""
    lines = [line.rstrip() for line in raw.expandtabs().splitlines()]
    summary = []
    for line in lines:
        if not line.strip():
            if summary:
                break
            continue
        summary.append(line.strip())
    params, section, current = {}, None, None
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            section, current = "google", None
            continue
        if stripped == "Parameters" and i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}:
            section, current = "numpy", None
            continue
        if stripped in ("Returns:", "Raises:", "Returns", "Yields:", "Examples:") or stripped.startswith("---"):
            if stripped.startswith("---"):
                continue
            section, current = None, None
            continue
        m = REST_PARAM.match(line)
        if m:
            params[m.group(1)] = m.group(2).strip()
            continue
        if section == "google":
            m = PARAM_LINE.match(line)
            if m and (len(line) - len(line.lstrip())) <= 8:
                current = m.group(1)
                params[current] = m.group(3).strip()
            elif current and stripped:
                params[current] += " " + stripped
        elif section == "numpy":
            m = NUMPY_PARAM.match(stripped)
            if m and line.startswith("    ") and not line.startswith("        "):
                current = m.group(1)
                params[current] = ""
            elif current and stripped:
                params[current] = (params[current] + " " + stripped).strip()
    return " ".join(summary), params


def tool_schema(fn, scope):
    doc = ast.get_docstring(fn)
    summary, documented = docstring(doc) if doc else ("", {})
    args = fn.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    pairs = list(zip(positional, defaults)) + list(zip(args.kwonlyargs, args.kw_defaults))
    properties, required, defs = {}, [], {}
    for arg, default in pairs:
        if arg.arg in INJECTED:
            continue
        if arg.annotation is not None:
            schema = schema_of(arg.annotation, scope, defs)
        else:
            ok, value = literal(default) if default is not None else (False, None)
            schema = {"type": {bool: "boolean", int: "integer", float: "number"}.get(type(value), "string")}
        if isinstance(default, ast.Constant) and default.value is None:
            schema = union([schema, {"type": "null"}])
        if documented.get(arg.arg):
            schema["description"] = documented[arg.arg]
        if default is None:
            required.append(arg.arg)
        else:
            ok, value = literal(default)
            if ok:
                schema["default"] = value
        properties[arg.arg] = schema
    parameters = {"type": "object", "properties": properties, "required": required}
    if args.kwarg is None:
        parameters["additionalProperties"] = False
    if defs:
        parameters["$defs"] = defs
    return {"name": fn.name, "description": summary or "No description provided.", "parameters": parameters,
            "line": fn.lineno}


def extract(path):
    with open(path, encoding="utf-8-sig") as f:
        text = f.read()
    tree = ast.parse(text, filename=path)
    scope = {"functions": [], "classes": {}, "imports": {}, "metadata": {}}
    module_scope(tree.body, scope)
    tools = [tool_schema(fn, scope) for fn in scope["functions"] if fn.name.startswith("tool_")]
    return {"path": path, "metadata": scope["metadata"], "tools": tools}


def main():
    folder = sys.argv[1]
    out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else None
    started = time.perf_counter()
    libraries, seen, folder_metadata = [], set(), {}
    for path, package in discover(folder):
        try:
            library = extract(path)
        except (SyntaxError, UnicodeDecodeError, OSError, ValueError, RecursionError):
            continue
        if package is not None:
            # A sibling without metadata shows its folder's X/X.py metadata.
            if os.path.basename(path) == os.path.basename(package) + ".py":
                folder_metadata[package] = library["metadata"]
            elif not library["metadata"]:
                library["metadata"] = folder_metadata.get(package, {})
        library["tools"] = [t for t in library["tools"] if t["name"] not in seen]
        seen.update(t["name"] for t in library["tools"])
        libraries.append(library)
    elapsed = time.perf_counter() - started
    if "--print" in sys.argv:
        json.dump(libraries, sys.stdout)
    result = {"discover_s": elapsed, "libraries": len(libraries), "tools": len(seen)}
    if out:
        with open(out, "w") as f:
            json.dump(result, f)
    else:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
