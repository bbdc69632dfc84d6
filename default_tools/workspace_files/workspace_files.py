"""workspace_files: list, read, write and edit files in the current workspace.

This is the primary file of a *folder library*: ``workspace_files/workspace_files.py``
is loaded first, then every other ``*.py`` in the folder (here ``search.py`` with the
search tool and ``_paths.py`` with helpers only). The folder is imported as a private
package, so siblings are reached with relative imports (``from ._paths import ...``).

Conventions shown here (copy them into your own libraries):

* Library metadata: ``TOOL_LIBRARY_NAME`` / ``TOOL_LIBRARY_DESC`` / ``TOOL_LIBRARY_ICON``,
  plain string constants read without running the file.
* ``init_tools_library(config)`` and ``set_confirm_handler(handler)`` hooks. Writing a
  file asks ``decision, reason = handler(content, label)`` first; ``decision`` is
  ``"allow"``, ``"reject"`` or ``"always"`` (allow and stop asking for this kind of
  action). With no handler, writes are refused unless the autonomy level is
  ``"full_access"``, which never asks.
* ``tool_workspace_files_prompt()``: the library's dynamic prompt (named after the
  file stem). ``tool_list_files_prompt()``: replaces the description of
  ``tool_list_files`` at spec-build time. Neither is a tool.
* Every tool returns ``{"success": True, "output": ...}`` or
  ``{"success": False, "error": "..."}`` and never raises for expected failures.
* ``resource_file(path)``: every workspace file as an MCP resource
  (``workspace:///{+path}``, declared in ``TOOL_RESOURCES``); ``prompt_review_file``: a
  prompt that embeds one; ``complete_resource_file`` / ``complete_prompt_review_file``
  complete the path as it is typed (SPEC §15). Resources and prompts raise on failure:
  MCP answers them with an error.
"""

import difflib
import fnmatch
import io
import os
import stat
from typing import Any, Callable, Literal, Optional

import lcp_files

from ._paths import WorkspacePathError, is_hidden_name, kind_of, looks_binary, walk, workspace_root

TOOL_LIBRARY_NAME = "Workspace Files"
TOOL_LIBRARY_DESC = (
    "List, read, search, create and edit text files inside the current workspace folder. "
    "Paths are relative to the workspace and can never leave it; writes ask the user first."
)
TOOL_LIBRARY_ICON = "📁"
# Declared effects (SPEC §12): reading is the default; writing and editing replace
# what a file held.
TOOL_POLICY = {"read_only": True, "idempotent": True, "open_world": False, "grade": {"w": 1, "d": 0}}
TOOL_POLICIES = {
    "tool_write_file": {"read_only": False, "destructive": True, "grade": {"w": 1, "d": 3}},
    "tool_edit_file": {"read_only": False, "destructive": True, "idempotent": False, "grade": {"w": 1, "d": 3}},
}
# Resources (SPEC §15): the URI each is read at; `{+path}` may hold slashes.
TOOL_RESOURCES = {
    "resource_file": {"uri": "workspace:///{+path}", "title": "Workspace file"},
}

# --------------------------------------------------------------------------- #
# Host configuration and confirmation                                          #
# --------------------------------------------------------------------------- #

AUTONOMY_LEVEL = "safe"  # "strict" | "safe" | "full_access", as the reference
_CONFIRM_HANDLER: Optional[Callable[..., Any]] = None
_ALWAYS_ALLOWED: set[str] = set()  # kinds of action the user allowed "always"

_KNOWN_LEVELS = {"strict", "safe", "full_access"}

# Limits that keep results small enough for a model's context.
_MAX_LIST_ENTRIES = 2000
_WALK_LIMIT = 50_000
_MAX_READ_LINES = 2000
_MAX_READ_CHARS = 100_000
_MAX_LINE_CHARS = 2000
_MAX_WRITE_BYTES = 10 * 1024 * 1024
_MAX_EDIT_BYTES = 10 * 1024 * 1024
_MAX_CONFIRM_CHARS = 20_000
_MAX_DIFF_CHARS = 20_000


def init_tools_library(config: Optional[dict] = None) -> None:
    """Called once by the host when this module is first loaded.

    Args:
        config (dict, optional): Host configuration for this library. Keys used:
            ``autonomy_level`` (``"strict"``: every action asks, an "always" answer is not
            remembered; ``"safe"``, the default; ``"full_access"``: nothing asks) and
            ``confirm_handler`` (a callable, same as ``set_confirm_handler``).
    """
    global AUTONOMY_LEVEL, _CONFIRM_HANDLER
    if not isinstance(config, dict):
        return
    level = str(config.get("autonomy_level", "safe") or "safe").strip().lower()
    AUTONOMY_LEVEL = level if level in _KNOWN_LEVELS else "safe"
    handler = config.get("confirm_handler")
    if handler is not None:
        _CONFIRM_HANDLER = handler


def set_confirm_handler(handler: Optional[Callable[..., Any]]) -> None:
    """Store the host's confirmation callback: ``handler(content, label) -> (decision, reason)``."""
    global _CONFIRM_HANDLER
    _CONFIRM_HANDLER = handler


def _normalise_decision(answer: Any) -> tuple[str, str]:
    """Turn whatever a handler returned into ``(decision, reason)``."""
    reason = ""
    if isinstance(answer, (tuple, list)):
        decision = answer[0] if answer else None
        reason = str(answer[1]) if len(answer) > 1 and answer[1] is not None else ""
    elif isinstance(answer, dict):
        decision = answer.get("decision")
        reason = str(answer.get("reason") or "")
    else:
        decision = answer
    if decision is True:
        return "allow", reason
    if decision is False or decision is None:
        return "reject", reason
    text = str(decision).strip().lower()
    if text in {"allow", "always"}:
        return text, reason
    if text in {"reject", "deny"}:
        return "reject", reason
    return "reject", reason or f"unexpected decision {decision!r}"


def _confirm(kind: str, content: str, label: str) -> Optional[str]:
    """Ask the user before a destructive action.

    Returns ``None`` when the action may go ahead, otherwise the error message the
    tool should return (nothing has been done at that point).
    """
    if AUTONOMY_LEVEL == "full_access" or (AUTONOMY_LEVEL != "strict" and kind in _ALWAYS_ALLOWED):
        return None
    handler = _CONFIRM_HANDLER
    if handler is None:
        return (
            f"{label} refused: it needs the user's confirmation, but no confirmation handler "
            f"is registered and the autonomy level is '{AUTONOMY_LEVEL}'. Ask the user to do "
            "it or to grant full access."
        )
    if len(content) > _MAX_CONFIRM_CHARS:
        hidden = len(content) - _MAX_CONFIRM_CHARS
        content = content[:_MAX_CONFIRM_CHARS] + f"\n[... {hidden} more characters not shown ...]"
    try:
        decision, reason = _normalise_decision(handler(content, label))
    except Exception as exc:  # a broken handler must not approve anything
        return f"{label} refused: the confirmation handler failed ({type(exc).__name__}: {exc})."
    if decision == "always":
        if AUTONOMY_LEVEL != "strict":
            _ALWAYS_ALLOWED.add(kind)
        return None
    if decision == "allow":
        return None
    return f"{label} rejected by user: {reason or 'no reason given'}"


def _fail(message: str) -> dict[str, Any]:
    return {"success": False, "error": message}


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, int(value)))


# --------------------------------------------------------------------------- #
# Prompt providers (never tools)                                               #
# --------------------------------------------------------------------------- #


def tool_workspace_files_prompt() -> str:
    """Library context for the model: the workspace folder and its top-level entries."""
    try:
        root = workspace_root()
        with os.scandir(root) as it:
            names = sorted(
                (entry.name + ("/" if entry.is_dir() else "") for entry in it if not is_hidden_name(entry.name)),
                key=str.lower,
            )
    except OSError as exc:
        return f"The workspace folder could not be read ({exc})."
    shown = ", ".join(names[:40]) if names else "(empty)"
    more = f" and {len(names) - 40} more" if len(names) > 40 else ""
    return (
        f"Workspace folder: {root}. Top-level entries ({len(names)}): {shown}{more}. "
        "File tools take paths relative to this folder and refuse paths outside it; "
        "writing or editing a file asks the user for confirmation."
    )


def tool_list_files_prompt() -> str:
    """Replaces the description of ``tool_list_files`` with one naming the workspace."""
    try:
        where = f"the workspace folder {workspace_root()}"
    except OSError:
        where = "the workspace folder"
    return (
        f"Lists files and folders in {where} (the current working directory) or in one "
        "of its sub-folders, optionally recursively and filtered by a glob pattern. Returns "
        "entries with their relative path, type and size in bytes. Use it to discover which "
        "files exist before reading, searching or writing them."
    )


# --------------------------------------------------------------------------- #
# Tools                                                                        #
# --------------------------------------------------------------------------- #


def tool_list_files(
    path: str = ".",
    pattern: str = "*",
    recursive: bool = False,
    include_hidden: bool = False,
    max_entries: int = 200,
) -> dict[str, Any]:
    """Lists files and folders in the workspace (the current working directory) or in
    one of its sub-folders, optionally recursively and filtered by a glob pattern.
    Returns entries with their relative path, type and size in bytes. Use it to discover
    which files exist before reading, searching or writing them.

    Args:
        path (str, optional): Folder to list, relative to the workspace. Defaults to
            "." (the workspace itself).
        pattern (str, optional): Glob matched against entry names, e.g. "*.py" or
            "report_*". A pattern containing "/" is matched against the path relative
            to the workspace, e.g. "src/*.rs". Defaults to "*" (everything).
        recursive (bool, optional): Also list the contents of sub-folders (symbolic
            links to folders are not followed). Defaults to False.
        include_hidden (bool, optional): Include dot-files, dot-folders,
            "__pycache__" and "node_modules". Defaults to False.
        max_entries (int, optional): Maximum number of entries returned (1 to 2000);
            the total number of matches is still reported. Defaults to 200.

    Returns:
        dict: On success ``{"success": True, "output": {"path", "entries", "shown",
        "total_matches", "truncated", "note"?}}`` where each entry is
        ``{"path", "type": "file" | "dir" | "symlink" | "other", "size"?}``;
        on failure ``{"success": False, "error": str}``.

    Examples:
        {"recursive": true, "$files": {"notes/todo.md": "- buy milk\\n"}}
    """
    try:
        folder, shown_path = lcp_files.open_folder(path)
    except WorkspacePathError as exc:
        return _fail(str(exc))
    limit = _clamp(max_entries, 1, _MAX_LIST_ENTRIES)
    match_path = "/" in pattern

    entries: list[dict[str, Any]] = []
    total = 0
    visited = 0
    walk_cut = False
    unreadable = [0]

    for _, name, rel, status in walk(
        folder, shown_path, skip_hidden=not include_hidden, recursive=recursive, unreadable=unreadable
    ):
        visited += 1
        if visited > _WALK_LIMIT:
            walk_cut = True
            break
        kind = kind_of(status)
        if not fnmatch.fnmatch(rel if match_path else name, pattern):
            continue
        total += 1
        if len(entries) < limit:
            item: dict[str, Any] = {"path": rel + ("/" if kind == "dir" else ""), "type": kind}
            if kind == "file":
                item["size"] = status.st_size
            entries.append(item)
    unreadable = unreadable[0]

    output: dict[str, Any] = {
        "path": shown_path,
        "entries": entries,
        "shown": len(entries),
        "total_matches": total,
        "truncated": total > len(entries) or walk_cut,
    }
    notes = []
    if total > len(entries):
        notes.append(
            f"Showing the first {len(entries)} of {total} matching entries; narrow 'path' or "
            f"'pattern', or raise 'max_entries' (at most {_MAX_LIST_ENTRIES})."
        )
    if walk_cut:
        notes.append(f"Stopped after visiting {_WALK_LIMIT} entries; the total is a lower bound.")
    if unreadable:
        notes.append(f"{unreadable} folder(s) could not be read.")
    if not entries and total == 0:
        notes.append("No entries matched.")
    if notes:
        output["note"] = " ".join(notes)
    return {"success": True, "output": output}


def tool_read_file(
    path: str,
    start_line: int = 1,
    max_lines: int = 400,
    line_numbers: bool = False,
) -> dict[str, Any]:
    """Reads a UTF-8 text file from the workspace and returns a window of its lines,
    together with the total line count so you can page through long files. Use it to
    inspect source code, configuration, logs or data files; binary files are refused.

    Args:
        path (str): File to read, relative to the workspace, e.g. "src/main.py".
        start_line (int, optional): First line to return, counting from 1.
            Defaults to 1.
        max_lines (int, optional): Maximum number of lines to return (1 to 2000).
            Lines longer than 2000 characters are shortened. Defaults to 400.
        line_numbers (bool, optional): Prefix every returned line with its line
            number and a tab, handy before editing. Defaults to False.

    Returns:
        dict: On success ``{"success": True, "output": {"path", "content",
        "start_line", "end_line", "total_lines", "truncated", "note"?}}``;
        ``truncated`` is True when lines after ``end_line`` were not returned.
        On failure ``{"success": False, "error": str}``.

    Examples:
        {"path": "notes.txt", "line_numbers": true, "$files": {"notes.txt": "first line\\nsecond line\\n"}}
    """
    try:
        handle, rel = lcp_files.open_file(path)
    except WorkspacePathError as exc:
        return _fail(str(exc))
    with handle:
        if start_line < 1:
            return _fail("start_line must be 1 or more (lines are counted from 1).")
        limit = _clamp(max_lines, 1, _MAX_READ_LINES)
        if looks_binary(handle):
            size = os.fstat(handle.fileno()).st_size
            return _fail(f"'{path}' looks like a binary file ({size} bytes); only text files can be read.")

        collected: list[str] = []
        chars = 0
        total = 0
        shortened = 0
        char_cut = False
        try:
            text = io.TextIOWrapper(handle, encoding="utf-8", errors="replace")
            for number, line in enumerate(text, 1):
                total = number
                if number < start_line or len(collected) >= limit or char_cut:
                    continue
                line = line.rstrip("\r\n")
                if len(line) > _MAX_LINE_CHARS:
                    line = line[:_MAX_LINE_CHARS] + f" [... line shortened, {len(line)} characters]"
                    shortened += 1
                if line_numbers:
                    line = f"{number:>6}\t{line}"
                if chars + len(line) > _MAX_READ_CHARS and collected:
                    char_cut = True
                    continue
                collected.append(line)
                chars += len(line) + 1
        except OSError as exc:
            return _fail(f"Cannot read '{path}': {exc}")

    if total == 0:
        return {
            "success": True,
            "output": {"path": rel, "content": "", "start_line": 1, "end_line": 0,
                       "total_lines": 0, "truncated": False, "note": "The file is empty."},
        }
    if start_line > total:
        return _fail(f"start_line {start_line} is past the end of '{path}', which has {total} lines.")

    end_line = start_line + len(collected) - 1
    content = "\n".join(collected)
    output: dict[str, Any] = {
        "path": rel,
        "content": content,
        "start_line": start_line,
        "end_line": end_line,
        "total_lines": total,
        "truncated": end_line < total,
    }
    notes = []
    if end_line < total:
        why = f"the {_MAX_READ_CHARS}-character limit" if char_cut else f"max_lines={limit}"
        notes.append(
            f"Showing lines {start_line}-{end_line} of {total} ({why}); call again with "
            f"start_line={end_line + 1} to continue."
        )
    if shortened:
        notes.append(f"{shortened} long line(s) were shortened.")
    if "\ufffd" in content:
        notes.append("The file is not valid UTF-8; undecodable bytes are shown as U+FFFD.")
    if notes:
        output["note"] = " ".join(notes)
    return {"success": True, "output": output}


def tool_write_file(
    path: str,
    content: str,
    overwrite: bool = False,
    create_dirs: bool = True,
) -> dict[str, Any]:
    """Creates a text file in the workspace with the given content, or replaces an
    existing file when overwrite is true. The user is asked to confirm before anything
    is written. Use it to save new files or rewrite small files completely; prefer
    tool_edit_file to change part of an existing file.

    Args:
        path (str): File to write, relative to the workspace, e.g. "notes/todo.md".
        content (str): Complete text to store (UTF-8). Line endings are written
            exactly as given.
        overwrite (bool, optional): Replace the file if it already exists. When
            False, an existing file is left untouched and an error is returned.
            Defaults to False.
        create_dirs (bool, optional): Create missing parent folders. Defaults to True.

    Returns:
        dict: On success ``{"success": True, "output": {"path", "bytes_written",
        "action": "created" | "overwritten"}}``; on failure or when the user rejects
        the write ``{"success": False, "error": str}``.

    Examples:
        {"path": "notes/todo.md", "content": "- buy milk\\n"}
    """
    data = content.encode("utf-8")
    if len(data) > _MAX_WRITE_BYTES:
        return _fail(f"The content is {len(data)} bytes; at most {_MAX_WRITE_BYTES} bytes can be written at once.")
    try:
        if not create_dirs:
            lcp_files.resolve(path).close()
        before, rel = lcp_files.status(path)
    except lcp_files.MissingFolder as exc:
        return _fail(f"{exc} Set create_dirs=true to create it.")
    except WorkspacePathError as exc:
        return _fail(str(exc))
    if before is not None and stat.S_ISDIR(before.st_mode):
        return _fail(f"'{path}' is a directory; give a file path.")
    exists = before is not None
    if exists and not overwrite:
        return _fail(
            f"'{path}' already exists ({before.st_size} bytes). Call again with "
            "overwrite=true to replace it, or use tool_edit_file to change part of it."
        )

    action = "overwritten" if exists else "created"
    summary = f"{'Overwrite' if exists else 'Create'} '{rel}' ({len(data)} bytes):\n\n{content}"
    refusal = _confirm("write_file", summary, "Write file")
    if refusal:
        return _fail(refusal)

    try:
        created, rel = lcp_files.write_atomically(path, data, overwrite=overwrite, create_folders=create_dirs)
    except FileExistsError:
        return _fail(f"'{path}' was created by someone else meanwhile; nothing was written.")
    except WorkspacePathError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"Cannot write '{path}': {exc.strerror or exc}")
    action = "created" if created else "overwritten"
    return {"success": True, "output": {"path": rel, "bytes_written": len(data), "action": action}}


def tool_edit_file(
    path: str,
    old_text: str,
    new_text: str,
    replace_all: bool = False,
) -> dict[str, Any]:
    """Replaces an exact piece of text in an existing workspace file and returns a
    unified diff of the change. The user is asked to confirm (and is shown the diff)
    before the file is saved. Use it for targeted edits; read the file first so old_text
    matches it character for character, including indentation.

    Args:
        path (str): File to edit, relative to the workspace.
        old_text (str): Exact text to find. It must occur exactly once unless
            replace_all is true; include a few surrounding lines to make it unique.
        new_text (str): Text that replaces old_text. Use an empty string to delete it.
        replace_all (bool, optional): Replace every occurrence instead of requiring
            a unique match. Defaults to False.

    Returns:
        dict: On success ``{"success": True, "output": {"path", "replacements",
        "diff"}}``; on failure (text not found, ambiguous match, rejected by the
        user) ``{"success": False, "error": str}``.

    Examples:
        {"path": "notes.txt", "old_text": "milk", "new_text": "bread", "$files": {"notes.txt": "buy milk\\n"}}
    """
    if not old_text:
        return _fail("old_text is empty; give the exact text to replace.")
    try:
        handle, rel = lcp_files.open_file(path)
    except WorkspacePathError as exc:
        return _fail(str(exc))
    with handle:
        if os.fstat(handle.fileno()).st_size > _MAX_EDIT_BYTES:
            return _fail(f"'{path}' is larger than {_MAX_EDIT_BYTES} bytes; it cannot be edited with this tool.")
        if looks_binary(handle):
            return _fail(f"'{path}' looks like a binary file; only text files can be edited.")
        try:
            original = handle.read(_MAX_EDIT_BYTES + 1).decode("utf-8")
        except UnicodeDecodeError:
            return _fail(f"'{path}' is not valid UTF-8 text; it cannot be edited safely.")
        except OSError as exc:
            return _fail(f"Cannot read '{path}': {exc}")

    count = original.count(old_text)
    if count == 0:
        hint = ""
        if "\r\n" in original and "\n" in old_text and "\r\n" not in old_text:
            hint = " The file uses Windows line endings (\\r\\n)."
        return _fail(f"old_text was not found in '{path}'. Read the file again and copy the text exactly.{hint}")
    if count > 1 and not replace_all:
        return _fail(
            f"old_text occurs {count} times in '{path}'. Include more surrounding text to make "
            "it unique, or set replace_all=true."
        )
    updated = original.replace(old_text, new_text) if replace_all else original.replace(old_text, new_text, 1)
    replacements = count if replace_all else 1

    diff = "".join(
        difflib.unified_diff(
            original.splitlines(keepends=True),
            updated.splitlines(keepends=True),
            fromfile=f"a/{rel}",
            tofile=f"b/{rel}",
        )
    )
    if len(diff) > _MAX_DIFF_CHARS:
        diff = diff[:_MAX_DIFF_CHARS] + f"\n[... diff truncated, {len(diff) - _MAX_DIFF_CHARS} more characters ...]"

    refusal = _confirm("write_file", f"Edit '{rel}' ({replacements} replacement(s)):\n\n{diff}", "Edit file")
    if refusal:
        return _fail(refusal)
    try:
        lcp_files.write_atomically(path, updated.encode("utf-8"), create_folders=False)
    except WorkspacePathError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"Cannot write '{path}': {exc.strerror or exc}")
    return {"success": True, "output": {"path": rel, "replacements": replacements, "diff": diff}}


# --------------------------------------------------------------------------- #
# Resources, prompts and completion (SPEC §15)                                 #
# --------------------------------------------------------------------------- #

_MAX_RESOURCE_BYTES = 1024 * 1024
_MAX_COMPLETIONS = 100


def resource_file(path: str) -> list:
    """A file of the workspace: UTF-8 text as text, anything else as a blob.

    Args:
        path (str): The file, relative to the workspace, e.g. "src/main.py".
    """
    try:
        handle, rel = lcp_files.open_file(path)
    except WorkspacePathError as exc:
        raise ValueError(str(exc)) from None
    with handle:
        data = handle.read(_MAX_RESOURCE_BYTES + 1)
    if len(data) > _MAX_RESOURCE_BYTES:
        raise ValueError(f"'{rel}' is larger than {_MAX_RESOURCE_BYTES} bytes; read it in parts with tool_read_file")
    try:
        return [{"text": data.decode("utf-8"), "mimeType": _text_type(rel)}]
    except UnicodeDecodeError:
        return [{"blob": data, "mimeType": "application/octet-stream"}]


def _text_type(path: str) -> str:
    extension = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    known = {"md": "text/markdown", "json": "application/json", "py": "text/x-python", "html": "text/html",
             "csv": "text/csv", "toml": "application/toml", "yaml": "application/yaml", "yml": "application/yaml"}
    return known.get(extension, "text/plain")


def complete_resource_file(argument: str, value: str) -> list:
    """The workspace files whose path starts with what was typed (hidden ones left
    out), walked beneath the workspace's descriptor as the tools walk it."""
    if argument != "path":
        return []
    try:
        fd, _ = lcp_files.open_folder(".")
    except WorkspacePathError:
        return []
    found = []
    walked = walk(fd, ".", skip_hidden=True)
    try:
        for _, _, rel, status in walked:
            rel = rel[2:] if rel.startswith("./") else rel
            if stat.S_ISREG(status.st_mode) and rel.startswith(value):
                found.append(rel)
                if len(found) >= _MAX_COMPLETIONS:
                    break
    finally:
        walked.close()
    return found


def prompt_review_file(path: str, focus: Literal["bugs", "clarity", "security"] = "bugs") -> list:
    """Asks the model to review a workspace file, with the file embedded.

    Args:
        path (str): The file to review, relative to the workspace.
        focus (str, optional): What the review looks for. Defaults to "bugs".
    """
    [content] = resource_file(path)
    uri = f"workspace:///{path}"
    return [
        {"role": "user", "content": [
            {"type": "resource", "resource": {"uri": uri, **content}},
            f"Review the file above for {focus}. Quote the lines you mean, say why, and suggest a fix for each.",
        ]},
    ]


def complete_prompt_review_file(argument: str, value: str):
    """Completes the path; `focus` is completed from its `Literal`."""
    return complete_resource_file(argument, value) if argument == "path" else None
