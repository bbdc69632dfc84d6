"""``LCPBinding``: a drop-in for lollms-client 1.21.1's ``LCPBinding`` (SPEC §19).

The same constructor keywords, methods, return shapes and handler conventions as the
reference (``lollms_client/tools_bindings/lcp/__init__.py``), with lcp underneath:
files are read by lcp's Rust parser (the LCP contract's rules: ``tool_<x>_prompt``
providers are not tools, a parameter named ``args`` is a parameter, types are exact),
and tools run in lcp's supervised, sandboxed worker processes of this interpreter, so
a tool that crashes or hangs returns a crash- or timeout-shaped result and the host
lives. A tool's call of the confirm or interaction handler runs the host's callable
here, in the host process, with the tool's arguments, and returns its answer.

When ``lollms_client`` is importable the class subclasses its ``LollmsToolBinding``, so
lollms' binding manager loads it.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import tempfile
import threading
import traceback as _traceback
import weakref
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from lcp_tools import _lcp
from lcp_tools.toolbox import ask_bridge, confirm_bridge, generate_bridge

BindingName = "LCPBinding"

# The reference's office-family gate: these libraries are left out of discovery and
# mounting unless the session's flags admit them (fail-closed).
_OFFICE_LIBRARY_STEMS = frozenset({
    "as_is_document_tools", "document_editor",
    "pptx_builder", "docx_mastery", "pptx_mastery", "xlsx_mastery",
    "powerpoint_tools", "word_tools", "excel_tools",
})
_PER_SOFTWARE_GATES = {
    "powerpoint_tools": ("enable_powerpoint",),
    "word_tools": ("enable_word",),
    "excel_tools": ("enable_excel",),
}

# Host handles the reference injects and never sends to a tool as arguments.
_HOST_HANDLES = ("tool_context", "lollms_client_instance", "discussion_instance", "user_interaction_handler")

# Outcomes where the tool's process, not the tool, ended the call.
_ENDED = {
    "timed_out": "timed out",
    "died": "crashed",
    "out_of_memory": "ran out of memory",
    "cancelled": "was cancelled",
}


def _office_library_admitted(stem: str, session_flags: Optional[Dict[str, Any]]) -> bool:
    if stem not in _OFFICE_LIBRARY_STEMS:
        return True
    flags = session_flags if isinstance(session_flags, dict) else {}
    own_gates = _PER_SOFTWARE_GATES.get(stem)
    if own_gates is not None:
        return any(bool(flags.get(g)) for g in own_gates)
    return bool(flags.get("enable_office_files")) or any(
        bool(flags.get(g)) for gates in _PER_SOFTWARE_GATES.values() for g in gates
    )


def _json_schema_to_param_list(schema: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The reference base class's flat parameter list of a JSON Schema object."""
    properties: Dict[str, Any] = schema.get("properties", {})
    required_set = set(schema.get("required", []))
    names = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
             "array": "list", "object": "dict", "null": "None"}
    params: List[Dict[str, Any]] = []
    for prop_name, prop_schema in properties.items():
        raw_type = prop_schema.get("type", "any")
        if isinstance(raw_type, list):
            non_null = [t for t in raw_type if t != "null"]
            raw_type = non_null[0] if non_null else "any"
        desc_parts = []
        if prop_schema.get("description"):
            desc_parts.append(prop_schema["description"])
        if prop_schema.get("enum"):
            desc_parts.append(f"Allowed values: {prop_schema['enum']}")
        entry: Dict[str, Any] = {
            "name": prop_name,
            "type": names.get(raw_type, raw_type),
            "description": " ".join(desc_parts),
            "optional": prop_name not in required_set,
        }
        if "default" in prop_schema:
            entry["default"] = prop_schema["default"]
        params.append(entry)
    return params


def _flat_type(schema: Dict[str, Any]) -> str:
    """The chat parameter type of an exact schema the flat list has no word for:
    ``Optional[T]`` (``anyOf: [T, null]``) is ``T``'s."""
    names = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
             "array": "list", "object": "dict"}
    kinds = [s.get("type") for s in schema.get("anyOf", []) if isinstance(s, dict) and s.get("type") != "null"]
    if len(kinds) == 1 and isinstance(kinds[0], str):
        return names.get(kinds[0], kinds[0])
    return "any"


class _StandaloneToolBinding:
    """``LollmsToolBinding``'s part the binding relies on, for hosts without lollms."""

    def __init__(self, binding_name: str, debug: Optional[bool] = False, **kwargs: Any) -> None:
        self.binding_name = binding_name
        self.debug = debug
        self.config = kwargs
        self.settings = kwargs

    def to_chat_tool_specs(self, **discover_kwargs: Any) -> Dict[str, Dict[str, Any]]:
        discover_kwargs.pop("force_refresh", None)
        specs: Dict[str, Dict[str, Any]] = {}
        for tool in self.discover_tools(force_refresh=False, **discover_kwargs):
            name = tool.get("name", "")
            if not name:
                continue
            if "input_schema" in tool and isinstance(tool["input_schema"], dict):
                parameters = _json_schema_to_param_list(tool["input_schema"])
            else:
                parameters = []
            specs[name] = {
                "name": name,
                "description": tool.get("description", f"Execute {name}"),
                "parameters": parameters,
                "output": tool.get("output", []),
                "callable": self._chat_callable(name),
                "_source": "personality_tools",
                "_binding": self.binding_name,
                "_source_file": tool.get("_python_file_path") or tool.get("_source_file"),
                "_python_file_path": tool.get("_python_file_path"),
            }
        return specs

    def _chat_callable(self, tool_name: str) -> Callable[..., Dict[str, Any]]:
        def _call(**kwargs: Any) -> Dict[str, Any]:
            try:
                clean = {k: v for k, v in kwargs.items()
                         if k not in ("discussion_instance", "lollms_client_instance", "tool_context")}
                result = self.execute_tool(
                    tool_name, clean,
                    discussion_instance=kwargs.get("discussion_instance"),
                    lollms_client_instance=kwargs.get("lollms_client_instance"),
                    tool_context=kwargs.get("tool_context"),
                )
                if not isinstance(result, dict):
                    result = {"output": result}
                if "success" not in result:
                    result["success"] = "error" not in result or not result.get("error")
                return result
            except Exception as exc:
                return {"error": str(exc), "success": False}
        return _call

    def get_binding_config(self) -> Dict[str, Any]:
        return self.settings

    def list_models(self) -> List[Any]:
        return []

    def get_zoo(self) -> List[Dict[str, Any]]:
        return []

    def download_from_zoo(self, index: int, progress_callback: Optional[Callable[[dict], None]] = None) -> dict:
        return {"status": False, "message": "Not implemented"}


try:  # lollms' binding manager loads subclasses of its base class
    from lollms_client.lollms_tools_binding import LollmsToolBinding as _Base
except Exception:  # lollms_client is optional
    _Base = _StandaloneToolBinding  # type: ignore[misc,assignment]


def _reference_default_tools() -> Optional[Path]:
    """The reference's built-in libraries, when lollms_client is installed."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("lollms_client")
    except Exception:
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "tools_bindings" / "lcp" / "default_tools"
    return folder if folder.is_dir() else None


def _default_tools() -> Path:
    """The built-in tools: the reference's when lollms_client is installed (so that a
    drop-in lists what lollms lists), else lcp's own."""
    return _reference_default_tools() or Path(_lcp.default_tools())


def _plain(value: Any) -> Any:
    """A host_tool_configs value as JSON carries it to a worker (callables stay here)."""
    if callable(value):
        return None
    return json.loads(json.dumps(value, default=str))


def _client_model(client: Any) -> tuple:
    """A host's ``lollms_client_instance`` as the model a tool's ``generate_text``
    asks (its ``generate_text`` runs here, in the host); ``(None, False)`` without one."""
    if client is None or not callable(getattr(client, "generate_text", None)):
        return None, False

    def generate(request: Dict[str, Any]) -> str:
        options = {k: request[k] for k in ("images", "n_predict", "temperature", "system_prompt") if request.get(k)}
        options.update(request.get("extra") or {})
        answer = client.generate_text(request.get("prompt", ""), **options)
        return answer if isinstance(answer, str) else json.dumps(answer, default=str)

    vision = False
    try:
        check = getattr(client, "has_vision_capability", None)
        vision = bool(check()) if callable(check) else False
    except Exception:
        vision = False
    return generate_bridge(generate), vision


def _exception_message(error: Optional[str], traceback: Optional[str]) -> str:
    """``str(exc)`` of lcp's ``Type: message``."""
    error = error or ""
    last = (traceback or "").rstrip().splitlines()[-1:] or [""]
    head, sep, rest = error.partition(": ")
    if sep and re.fullmatch(r"[A-Za-z_][\w.]*", head) and last[0].startswith(head):
        return rest
    if re.fullmatch(r"[A-Za-z_][\w.]*", error) and last[0].strip() == error:
        return ""
    return error


class LCPBinding(_Base):  # type: ignore[misc,valid-type]
    """Local LollmsCommunicationProtocol (LCP) binding, run by lcp.

    Keywords as the reference's: ``tools_folders`` / ``tools_folder_path`` (str, Path
    or list), ``tool_files`` (implies no folder scan), neither: the built-in tools;
    ``confirm_handler``, ``user_interaction_handler``, ``host_tool_configs`` (by
    library stem: what its ``init_tools_library`` gets) and the load flags of
    ``TOOL_LIBRARY_LOAD_FLAG``. lcp's own: ``timeout`` (seconds a call may take),
    ``venv`` (a virtual environment whose packages tools import besides this one's).
    """

    def __init__(self, host_tool_configs: Optional[Dict[str, Dict[str, Any]]] = None, **kwargs: Any) -> None:
        super().__init__(binding_name="LCP")
        self.host_tool_configs: Dict[str, Dict[str, Any]] = host_tool_configs or {}
        self.confirm_handler: Optional[Callable] = kwargs.get("confirm_handler")
        self.user_interaction_handler: Optional[Callable] = kwargs.get("user_interaction_handler")
        self.timeout: Optional[float] = kwargs.get("timeout")
        self._venv = kwargs.get("venv")

        self.tool_files: List[Path] = []
        files_input = kwargs.get("tool_files")
        if files_input:
            if isinstance(files_input, (str, Path)):
                self.tool_files.append(Path(files_input))
            elif isinstance(files_input, list):
                self.tool_files.extend(Path(f) for f in files_input)

        self.tools_folders: List[Path] = []
        folders_input = kwargs.get("tools_folders") or kwargs.get("tools_folder_path")
        if folders_input:
            if isinstance(folders_input, (str, Path)):
                self.tools_folders.append(Path(folders_input))
            elif isinstance(folders_input, list):
                self.tools_folders.extend(Path(f) for f in folders_input)
        elif not self.tool_files:
            self.tools_folders.append(_default_tools())

        self._load_flag_kwargs: Dict[str, Any] = kwargs
        self.session_flags: Dict[str, Any] = {}
        self.discovered_tools: List[Dict[str, Any]] = []
        # Files whose tools were registered from code or mounted, after the scan.
        self._extra_files: List[Path] = []
        # The folder of the files registered from code, made on the first registration
        # and removed with the binding (or when the interpreter exits).
        self._dynamic_dir: Optional[Path] = None
        self._native: Any = None
        self._native_files: List[str] = []
        self._prefetched: Any = None
        self._discover_local_tools()

    # ── discovery ────────────────────────────────────────────────────────────

    @property
    def tools_folder_path(self) -> Optional[Path]:
        return self.tools_folders[0] if self.tools_folders else None

    def set_session_flags(self, flags: Optional[Dict[str, Any]]) -> None:
        """Registers session feature flags and discovers again (office-family gate)."""
        self.session_flags = dict(flags) if isinstance(flags, dict) else {}
        self._discover_local_tools()

    def _scan_files(self) -> List[Path]:
        """The reference's walk: per folder, ``X/X.py`` then its siblings, loose files;
        then ``tool_files``; in the order the file system lists them."""
        files: List[Path] = []
        for folder in self.tools_folders:
            if not folder or not folder.is_dir():
                continue
            for item in folder.iterdir():
                py_file = None
                siblings: List[Path] = []
                if item.is_dir():
                    py_file = item / f"{item.name}.py"
                    siblings = [f for f in item.iterdir()
                                if f.is_file() and f.suffix == ".py" and f.stem != "__init__" and f != py_file]
                elif item.suffix == ".py" and item.stem != "__init__":
                    py_file = item
                if py_file and py_file.exists():
                    files.append(py_file)
                files.extend(siblings)
        for py_file in self.tool_files:
            if py_file and py_file.exists() and py_file.suffix == ".py":
                files.append(py_file)
        return files

    def _admitted(self, py_file: Path) -> bool:
        return _office_library_admitted(py_file.stem, self.session_flags) and self._is_library_permitted(py_file)

    def _discover_local_tools(self) -> None:
        files = [f for f in self._scan_files() + self._extra_files if self._admitted(f)]
        self._load_files(files)

    def _load_files(self, files: List[Path]) -> None:
        """Reads ``files`` with lcp (first file wins a tool name) into ``discovered_tools``."""
        seen = set()
        paths: List[str] = []
        for f in files:
            resolved = str(f.resolve())
            if resolved not in seen:
                seen.add(resolved)
                paths.append(resolved)
        self.discovered_tools = []
        self._open_tools = set()
        if paths != self._native_files or self._native is None:
            self._native = self._toolbox(paths) if paths else None
            self._native_files = paths
        if self._native is None:
            return
        manifest = json.loads(self._native.export("manifest", False, True, False))
        names = set()
        for tool in manifest.get("tools", []):
            name = tool.get("name")
            if not name or name in names or tool.get("source") not in (None, "file"):
                continue
            names.add(name)
            schema = tool.get("parameters") or {}
            input_schema: Dict[str, Any] = {
                "type": "object",
                "properties": dict(schema.get("properties") or {}),
                "required": list(schema.get("required") or []),
            }
            if "$defs" in schema:
                input_schema["$defs"] = schema["$defs"]
            entry: Dict[str, Any] = {
                "name": name,
                "description": tool.get("description") or "No description provided.",
                "input_schema": input_schema,
                "_python_file_path": str(Path(tool["path"]).resolve()) if tool.get("path") else None,
            }
            if schema.get("additionalProperties", True) is not False:
                self._open_tools.add(name)  # it takes **kwargs
            if tool.get("prompt_provider"):
                entry["_has_dynamic_prompt"] = True
                entry["_dynamic_prompt_fn_name"] = tool["prompt_provider"]
            if self._dynamic_dir is not None and entry["_python_file_path"] and \
                    Path(entry["_python_file_path"]).parent == self._dynamic_dir:
                entry["_python_file_path"] = None
                entry["_lcp_dynamic"] = True
            self.discovered_tools.append(entry)
        self._prefetch()

    def _toolbox(self, files: List[str]) -> Any:
        libraries = {stem: {k: _plain(v) for k, v in cfg.items() if not callable(v)}
                     for stem, cfg in self.host_tool_configs.items() if isinstance(cfg, dict)}
        native = _lcp.Toolbox([], files, None, None, None,
                              os.fspath(self._venv) if self._venv else None, False, json.dumps(libraries))
        if self.confirm_handler is not None:
            native.set_confirm_handler(confirm_bridge(self.confirm_handler, spread=True))
        if self.user_interaction_handler is not None:
            native.set_user_interaction_handler(ask_bridge(self.user_interaction_handler))
        return native

    def _library_load_flag(self, py_file: Path) -> Optional[str]:
        try:
            code_text = py_file.read_text(encoding="utf-8")
        except Exception:
            return None
        match = re.search(r'^TOOL_LIBRARY_LOAD_FLAG\s*=\s*["\']([A-Za-z0-9_]+)["\']', code_text, re.MULTILINE)
        return match.group(1) if match else None

    def _is_library_permitted(self, py_file: Path) -> bool:
        flag_name = self._library_load_flag(py_file)
        if not flag_name:
            return True
        host_cfg = self.host_tool_configs.get(py_file.stem, {})
        raw_value = host_cfg.get(flag_name, self._load_flag_kwargs.get(flag_name, False))
        if isinstance(raw_value, str):
            return raw_value.strip().lower() in ("true", "1", "yes", "on")
        return bool(raw_value)

    def _prefetch(self) -> None:
        """Starts the prompt providers in a worker now, in the background: a worker
        process and a library's import take longer than discovery, and a host asks
        for the descriptions soon after it constructs the binding."""
        self._prefetched = None
        if self._native is None or not any(t.get("_has_dynamic_prompt") for t in self.discovered_tools):
            return
        native, cwd, box = self._native, os.getcwd(), {}

        def run() -> None:
            try:
                box["descriptions"] = native.prompt_descriptions(cwd)
            except Exception:
                pass

        thread = threading.Thread(target=run, name="lcp-prompt-providers", daemon=True)
        thread.start()
        self._prefetched = (native, cwd, thread, box)

    def _dynamic_descriptions(self) -> Dict[str, str]:
        if self._native is None or not any(t.get("_has_dynamic_prompt") for t in self.discovered_tools):
            return {}
        prefetched, self._prefetched = getattr(self, "_prefetched", None), None
        if prefetched is not None:
            native, cwd, thread, box = prefetched
            thread.join()
            # Used once, for the same files and working directory: later asks run
            # the providers again, as the reference does.
            if native is self._native and cwd == os.getcwd() and "descriptions" in box:
                return json.loads(box["descriptions"])
        return json.loads(self._native.prompt_descriptions(os.getcwd()))

    def get_dynamic_tool_description(self, tool_def: Dict[str, Any]) -> Optional[str]:
        """Runs the tool's prompt provider (in a worker) and returns its description."""
        if not tool_def.get("_has_dynamic_prompt"):
            return None
        return self._dynamic_descriptions().get(tool_def.get("name"))

    def discover_tools(self, specific_tool_names: Optional[List[str]] = None, **kwargs: Any) -> List[Dict[str, Any]]:
        if kwargs.get("force_refresh", False) or not self.discovered_tools:
            self._discover_local_tools()
        tools = self.discovered_tools
        if specific_tool_names:
            tools = [t for t in tools if t.get("name") in specific_tool_names]
        if any(t.get("_has_dynamic_prompt") for t in tools):
            descriptions = self._dynamic_descriptions()
            for t in tools:
                if t.get("_has_dynamic_prompt") and descriptions.get(t["name"]):
                    t["description"] = descriptions[t["name"]]
        return tools

    def list_tools(self, **kwargs: Any) -> List[Dict[str, Any]]:
        return self.discover_tools(**kwargs)

    def to_chat_tool_specs(self, **discover_kwargs: Any) -> Dict[str, Dict[str, Any]]:
        # discover_tools already laid the providers' descriptions over the static ones.
        specs = super().to_chat_tool_specs(**discover_kwargs)
        schemas = {t["name"]: t.get("input_schema", {}) for t in self.discovered_tools}
        for name, spec in specs.items():
            properties = schemas.get(name, {}).get("properties", {})
            for parameter in spec.get("parameters", []):
                if parameter.get("type") == "any":
                    parameter["type"] = _flat_type(properties.get(parameter.get("name"), {}))
        return specs

    # ── libraries ────────────────────────────────────────────────────────────

    @staticmethod
    def _normalize_name(raw: str) -> str:
        normalized = re.sub(r"[\s\-]+", "_", (raw or "").strip().lower())
        return normalized[5:] if normalized.startswith("tool_") else normalized

    def _library_aliases(self, py_file: Path) -> List[str]:
        try:
            code_text = py_file.read_text(encoding="utf-8")
        except Exception:
            return []
        match = re.search(r'^TOOL_LIBRARY_ALIASES\s*=\s*[\[(](.*?)[\])]', code_text, re.MULTILINE | re.DOTALL)
        if not match:
            return []
        return [self._normalize_name(alias) for alias in re.findall(r'["\']([^"\']+)["\']', match.group(1))]

    def _library_display_name(self, py_file: Path) -> str:
        try:
            code_text = py_file.read_text(encoding="utf-8")
        except Exception:
            return ""
        match = re.search(r'^TOOL_LIBRARY_NAME\s*=\s*["\']([^"\']+)["\']', code_text, re.MULTILINE)
        return match.group(1) if match else ""

    def _search_dirs(self) -> List[Path]:
        search_dirs = list(self.tools_folders)
        default_dir = _default_tools()
        if default_dir not in search_dirs:
            search_dirs.append(default_dir)
        return search_dirs

    def _iter_library_files(self):
        for folder in self._search_dirs():
            if not folder.exists() or not folder.is_dir():
                continue
            for item in folder.iterdir():
                if item.is_dir():
                    primary = item / f"{item.name}.py"
                    if primary.exists():
                        yield item.name, primary
                    else:
                        for fallback in item.glob("*.py"):
                            if fallback.stem != "__init__":
                                yield item.name, fallback
                elif item.suffix == ".py" and item.stem != "__init__":
                    yield item.stem, item

    def _resolve_library_name(self, raw: str) -> Optional[str]:
        clean = (raw or "").strip()
        if not clean:
            return None
        direct_dir = self._find_library_dir(clean)
        if direct_dir:
            return direct_dir.name
        normalized = self._normalize_name(clean)
        candidates: Dict[str, List[str]] = {}
        for stem, py_file in self._iter_library_files():
            variants = [self._normalize_name(stem), self._normalize_name(self._library_display_name(py_file))]
            variants.extend(self._library_aliases(py_file))
            candidates[stem] = [v for v in variants if v]
            if normalized in candidates[stem]:
                return stem
        all_variants = {v for variants in candidates.values() for v in variants}
        close = difflib.get_close_matches(normalized, all_variants, n=1, cutoff=0.75)
        if close:
            for stem, variants in candidates.items():
                if close[0] in variants:
                    return stem
        return None

    def _find_library_dir(self, library_name: str) -> Optional[Path]:
        clean_name = library_name.strip()
        for folder in self._search_dirs():
            if not folder.exists() or not folder.is_dir():
                continue
            candidate = folder / clean_name
            if candidate.exists() and candidate.is_dir():
                return candidate
            if clean_name.startswith("tool_"):
                candidate_alt = folder / clean_name[5:]
                if candidate_alt.exists() and candidate_alt.is_dir():
                    return candidate_alt
        return None

    def _extract_tool_names_from_file(self, py_file: Path) -> set:
        """The tools lcp reads in ``py_file`` (prompt providers are not tools)."""
        try:
            native = _lcp.Toolbox([], [str(py_file)], None, None, None, None, False)
            manifest = json.loads(native.export("manifest", False, True, False))
        except Exception:
            return set()
        return {t["name"] for t in manifest.get("tools", []) if t.get("name")}

    def _library_files(self, lib_path: Path) -> List[Path]:
        """A library folder's files, as the reference's mount walks it."""
        files: List[Path] = []
        for item in lib_path.iterdir():
            if item.is_dir():
                py_file = item / f"{item.name}.py"
                if py_file.exists():
                    files.append(py_file)
                    files.extend(f for f in item.iterdir()
                                 if f.is_file() and f.suffix == ".py" and f.stem != "__init__" and f != py_file)
                else:
                    files.extend(f for f in item.iterdir()
                                 if f.is_file() and f.suffix == ".py" and f.stem != "__init__")
            elif item.suffix == ".py" and item.stem != "__init__":
                files.append(item)
        return files

    def find_library_for_tool(self, tool_name: str) -> Optional[str]:
        clean_name = tool_name.strip()
        direct_dir = self._find_library_dir(clean_name)
        if direct_dir:
            return direct_dir.name
        for t in self.discovered_tools:
            if t.get("name") == clean_name and t.get("_python_file_path"):
                p = Path(t["_python_file_path"])
                return p.parent.name if p.parent.name not in ("default_tools", "tools") else p.stem
        for folder in self._search_dirs():
            if not folder.exists() or not folder.is_dir():
                continue
            for item in folder.iterdir():
                py_files: List[Path] = []
                if item.is_dir():
                    py_files = [f for f in item.glob("*.py") if f.stem != "__init__"]
                elif item.suffix == ".py" and item.stem != "__init__":
                    py_files = [item]
                for py_f in py_files:
                    if clean_name in self._extract_tool_names_from_file(py_f) and self._is_library_permitted(py_f):
                        return item.name if item.is_dir() else py_f.stem
        return None

    def is_tool_available(self, tool_name: str) -> bool:
        clean_name = tool_name.strip()
        if any(t.get("name") == clean_name for t in self.discovered_tools):
            return True
        return self.find_library_for_tool(clean_name) is not None

    def load_tool_by_name(self, tool_name: str) -> Optional[Dict[str, Any]]:
        clean_name = tool_name.strip()
        match = next((t for t in self.discovered_tools if t.get("name") == clean_name), None)
        if match:
            return match
        lib_name = self.find_library_for_tool(clean_name) or self._resolve_library_name(clean_name)
        if lib_name:
            self.mount_tool_library(lib_name)
            tool_match = next((t for t in self.discovered_tools if t.get("name") == clean_name), None)
            if tool_match:
                return tool_match
            for t in self.discovered_tools:
                if lib_name in (t.get("_python_file_path") or ""):
                    return t
        return None

    def is_library_mounted(self, library_name: str) -> bool:
        lib_path = self._find_library_dir(library_name)
        if not lib_path or not lib_path.is_dir():
            return False
        expected: set = set()
        for py_file in self._library_files(lib_path):
            expected |= self._extract_tool_names_from_file(py_file)
        if not expected:
            return False
        return expected.issubset({t.get("name") for t in self.discovered_tools})

    def mount_tool_library_if_absent(self, library_name: str) -> bool:
        if self.is_library_mounted(library_name):
            return True
        return self.mount_tool_library(library_name)

    def mount_tool_library(self, library_name: str) -> bool:
        """Registers a library's tools (found by folder name, display name, alias or
        a close spelling) without running any of its code."""
        resolved_name = self._resolve_library_name(library_name)
        if resolved_name and not _office_library_admitted(resolved_name, self.session_flags):
            return False
        lib_path = self._find_library_dir(resolved_name or library_name)
        if not lib_path or not lib_path.is_dir():
            return False
        primary_py = lib_path / f"{lib_path.name}.py"
        if primary_py.exists() and not self._is_library_permitted(primary_py):
            return False
        files = self._library_files(lib_path)
        expected: set = set()
        for py_file in files:
            expected |= self._extract_tool_names_from_file(py_file)
        if not expected:
            return False
        registered = {t.get("name") for t in self.discovered_tools}
        if lib_path not in self.tools_folders:
            self.tools_folders.append(lib_path)
        if expected.issubset(registered):
            return True
        before = len(self.discovered_tools)
        self._extra_files.extend(f for f in files if f not in self._extra_files)
        self._discover_local_tools()
        return len(self.discovered_tools) > before or bool(expected & registered)

    def register_tool_from_code(self, tool_name_prefix: str, code: str) -> bool:
        """Registers the tools of ``code`` (its ``tool_*`` functions), run in workers
        like any other file's."""
        try:
            if self._dynamic_dir is None:
                self._dynamic_dir = Path(tempfile.mkdtemp(prefix="lcp_dynamic_tools_"))
                weakref.finalize(self, shutil.rmtree, self._dynamic_dir, True)
            target = self._dynamic_dir / f"{re.sub(r'[^0-9A-Za-z_]', '_', tool_name_prefix)}.py"
            target.write_text(code, encoding="utf-8")
            names = self._extract_tool_names_from_file(target)
            if not names:
                return False
            if target not in self._extra_files:
                self._extra_files.append(target)
            # A name registered from code replaces the one discovered before.
            scanned = [f for f in self._scan_files() + self._extra_files if self._admitted(f) and f != target]
            self._load_files([target] + scanned)
            return True
        except Exception:
            return False

    def unregister_tools_by_prefix(self, tool_name_prefix: str) -> int:
        initial_count = len(self.discovered_tools)
        self.discovered_tools = [
            t for t in self.discovered_tools
            if not (t.get("name", "").startswith(f"tool_{tool_name_prefix}") or t.get("name", "") == tool_name_prefix)
        ]
        return initial_count - len(self.discovered_tools)

    # ── handlers ─────────────────────────────────────────────────────────────

    def set_confirm_handler(self, handler: Optional[Callable]) -> None:
        """Registers the confirmation callback; the libraries the workers loaded get
        it again through their ``set_confirm_handler`` hook."""
        self.confirm_handler = handler
        for lib_cfg in self.host_tool_configs.values():
            if isinstance(lib_cfg, dict):
                lib_cfg["confirm_handler"] = handler
        self._rebind()

    def set_user_interaction_handler(self, handler: Optional[Callable]) -> None:
        self.user_interaction_handler = handler
        for lib_cfg in self.host_tool_configs.values():
            if isinstance(lib_cfg, dict):
                lib_cfg["user_interaction_handler"] = handler
        self._rebind()

    def _rebind(self) -> None:
        """The handlers reach the libraries already loaded: their workers are
        replaced by workers that load them again with the new handlers (as the
        reference calls the hooks again on each call)."""
        if self._native is not None and self._native_files:
            self._native.close()
            self._native = self._toolbox(self._native_files)

    # ── calls ────────────────────────────────────────────────────────────────

    def _resolve_context_files(self, context_files: Any) -> List[str]:
        if isinstance(context_files, (str, Path)):
            entries: List[Any] = [context_files]
        elif isinstance(context_files, (list, tuple)):
            entries = list(context_files)
        else:
            return []
        resolved: List[str] = []
        for entry in entries:
            try:
                entry_path = Path(str(entry))
                if not entry_path.is_absolute():
                    entry_path = Path.cwd() / entry_path
                entry_path = entry_path.resolve()
                if entry_path.is_file():
                    resolved.append(str(entry_path))
            except Exception:
                continue
        return resolved

    def execute_tool(self, tool_name: str, params: Dict[str, Any], discussion_instance: Any = None,
                     **kwargs: Any) -> Dict[str, Any]:
        """Runs ``tool_name`` in a worker and returns the reference's result shape.

        Returned: ``{output, status_code: 200, success: True}`` and the pass-through
        keys; a reported failure: ``{output, error, success: False, status_code: 500}``;
        raised: that and ``traceback``; a crash, a timeout or running out of memory
        (the host lives): the same with ``outcome``; unknown: ``{error, status_code: 404}``.
        """
        tool_def = next((t for t in self.discovered_tools if t.get("name") == tool_name), None)
        if not tool_def:
            return {"error": f"Tool '{tool_name}' not found.", "status_code": 404}
        input_schema = tool_def.get("input_schema", {})
        properties = input_schema.get("properties", {})
        for prop_name, prop_info in properties.items():
            if prop_name not in params and isinstance(prop_info, dict) and "default" in prop_info:
                params[prop_name] = prop_info["default"]
        takes_any = tool_name in getattr(self, "_open_tools", ())
        clean = {k: v for k, v in params.items() if (takes_any or k in properties) and k not in _HOST_HANDLES}
        try:
            arguments = json.dumps(clean, default=str)
            timeout = kwargs.get("timeout", self.timeout)
            client = kwargs.get("lollms_client_instance") or params.get("lollms_client_instance")
            generate, vision = _client_model(client)
            raw = json.loads(self._native.call(tool_name, arguments, os.getcwd(), timeout,
                                               None, None, None, None, generate, vision))
        except Exception as exc:
            return {"error": f"Error executing '{tool_name}': {exc}", "traceback": _traceback.format_exc(),
                    "status_code": 500}
        outcome = raw.get("outcome")
        if outcome in ("returned", "reported"):
            return self._normalized(tool_name, raw.get("output"))
        message = raw.get("error") or "the call failed"
        if outcome == "raised":
            message = _exception_message(raw.get("error"), raw.get("traceback"))
            error = f"Tool '{tool_name}' crashed: {message}"
        elif outcome in _ENDED:
            error = f"Tool '{tool_name}' {_ENDED[outcome]}: {message}"
        else:
            error = f"Tool '{tool_name}' crashed: {message}"
        failure: Dict[str, Any] = {
            "output": {"success": False, "error": error},
            "error": error,
            "traceback": raw.get("traceback") or "",
            "success": False,
            "status_code": 500,
        }
        if outcome != "raised":
            failure["outcome"] = outcome
        return failure

    def _normalized(self, tool_name: str, result: Any) -> Dict[str, Any]:
        """The reference's normalisation of a returned value."""
        is_failure = False
        error_msg = None
        if not isinstance(result, dict):
            result = {"success": True, "output": result}
        else:
            if result.get("success") is False:
                is_failure = True
                error_msg = result.get("error") or result.get("message") or "Tool reported failure."
            status_val = str(result.get("status", "")).lower()
            if status_val in ("error", "failure", "failed"):
                is_failure = True
                error_msg = result.get("error") or result.get("message") or f"Tool status was '{status_val}'."
            rc = result.get("return_code")
            if rc is not None and rc != 0:
                is_failure = True
                error_msg = result.get("error") or result.get("stderr") or f"Non-zero return code: {rc}"
            if "error" in result and result["error"] and not is_failure and result.get("success") is not True:
                is_failure = True
                error_msg = result["error"]
            if "output" not in result:
                payload = None
                for key in ("result", "data", "response", "papers", "content", "text"):
                    if key in result:
                        payload = result[key]
                        break
                if payload is None:
                    meta_keys = {"success", "status", "error", "message", "return_code", "stderr"}
                    clean_dict = {k: v for k, v in result.items() if k not in meta_keys}
                    payload = clean_dict if clean_dict else result.get("output", "Tool executed successfully.")
                result["output"] = payload
        if is_failure:
            if not result.get("output"):
                result["output"] = result.get("error", "Tool failed.")
            return {"output": result.get("output"), "error": error_msg, "success": False, "status_code": 500}
        if not result.get("output"):
            result["output"] = "Tool executed successfully (no output)."
        final_result: Dict[str, Any] = {"output": result.get("output"), "status_code": 200, "success": True}
        for key in ("image_filename", "image_b64", "images", "image_media_types", "prompt_injection"):
            if result.get(key) is not None:
                final_result[key] = result[key]
        if result.get("context_files") is not None:
            final_result["context_files"] = self._resolve_context_files(result.get("context_files"))
        return final_result

    def close(self) -> None:
        """Ends the worker processes (a later call starts new ones)."""
        if self._native is not None:
            self._native.close()


__all__ = ["BindingName", "LCPBinding"]
