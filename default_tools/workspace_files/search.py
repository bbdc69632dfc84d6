"""Search tool of the ``workspace_files`` library.

A sibling of ``workspace_files.py``: it is discovered after the primary file and its
``tool_*`` functions become tools of the same library. It only reads files, so it needs
no confirmation and defines no hooks; the shared path confinement comes from the
helper module next to it (``from ._paths import ...``).
"""

import fnmatch
import os
import re
import time
from pathlib import Path
from typing import Any

from ._paths import (
    WorkspacePathError,
    display_path,
    is_hidden_name,
    is_inside,
    looks_binary,
    resolve_in_workspace,
    workspace_root,
)

# Declared effects (SPEC §12), per file: this one only reads.
TOOL_POLICY = {"read_only": True, "idempotent": True, "open_world": False, "grade": {"w": 1, "d": 0}}

_MAX_MATCHES = 1000
_MAX_FILE_BYTES = 5 * 1024 * 1024
_MAX_FILES_SCANNED = 20_000
_TIME_BUDGET_SECONDS = 20.0
_MAX_MATCH_LINE_CHARS = 300


def _shorten(line: str, start: int) -> str:
    """Trim a matching line to a window around the match."""
    line = line.rstrip("\r\n")
    if len(line) <= _MAX_MATCH_LINE_CHARS:
        return line
    begin = max(0, min(start - 100, len(line) - _MAX_MATCH_LINE_CHARS))
    piece = line[begin : begin + _MAX_MATCH_LINE_CHARS]
    return ("…" if begin > 0 else "") + piece + ("…" if begin + _MAX_MATCH_LINE_CHARS < len(line) else "")


def tool_search_files(
    query: str,
    path: str = ".",
    glob: str = "*",
    regex: bool = False,
    case_sensitive: bool = False,
    max_matches: int = 100,
) -> dict[str, Any]:
    """Searches the text files of the workspace for a string or a regular expression and
    returns the matching lines with their file path and line number. Use it to find
    where something is defined or mentioned before reading the file; hidden folders,
    "__pycache__", "node_modules", binary files and files over 5 MB are skipped.

    Args:
        query (str): Text to look for. Matched literally unless regex is true.
        path (str, optional): File or folder to search, relative to the workspace;
            folders are searched recursively. Defaults to "." (the whole workspace).
        glob (str, optional): Only search files whose name matches this glob, e.g.
            "*.py" or "*.md". A glob containing "/" is matched against the path
            relative to the workspace, e.g. "docs/*.md". Defaults to "*".
        regex (bool, optional): Treat query as a Python regular expression, e.g.
            "^import (os|sys)". Defaults to False.
        case_sensitive (bool, optional): Match upper and lower case exactly.
            Defaults to False.
        max_matches (int, optional): Maximum number of matching lines returned
            (1 to 1000); the total count is still reported. Defaults to 100.

    Returns:
        dict: On success ``{"success": True, "output": {"query", "matches",
        "shown", "total_matches", "files_with_matches", "files_searched",
        "truncated", "note"?}}`` where each match is ``{"path", "line", "text"}``;
        on failure (bad path, invalid regex) ``{"success": False, "error": str}``.

    Examples:
        {"query": "milk", "$files": {"notes.txt": "buy milk\\n", "todo.md": "- milk\\n"}}
    """
    if not query:
        return {"success": False, "error": "query is empty; give the text or pattern to search for."}
    try:
        base = resolve_in_workspace(path, must_exist=True)
    except WorkspacePathError as exc:
        return {"success": False, "error": str(exc)}
    flags = 0 if case_sensitive else re.IGNORECASE
    try:
        matcher = re.compile(query if regex else re.escape(query), flags)
    except re.error as exc:
        return {"success": False, "error": f"Invalid regular expression {query!r}: {exc}"}
    limit = max(1, min(_MAX_MATCHES, int(max_matches)))
    root = workspace_root()
    match_path = "/" in glob

    def candidate_files():
        if base.is_file():
            yield base
            return
        for folder, dirnames, filenames in os.walk(base, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if not is_hidden_name(d))
            for name in sorted(filenames):
                if is_hidden_name(name):
                    continue
                yield Path(folder) / name

    matches: list[dict[str, Any]] = []
    total = 0
    files_with_matches = 0
    files_searched = 0
    skipped = {"binary": 0, "large": 0, "unreadable": 0, "outside": 0}
    stopped_early = ""
    deadline = time.monotonic() + _TIME_BUDGET_SECONDS

    for file_path in candidate_files():
        rel = display_path(file_path, root)
        if not fnmatch.fnmatch(rel if match_path else file_path.name, glob):
            continue
        if files_searched >= _MAX_FILES_SCANNED:
            stopped_early = f"Stopped after searching {_MAX_FILES_SCANNED} files; narrow 'path' or 'glob'."
            break
        if time.monotonic() > deadline:
            stopped_early = f"Stopped after {_TIME_BUDGET_SECONDS:.0f} seconds; narrow 'path' or 'glob'."
            break
        if file_path.is_symlink() and not is_inside(file_path, root):
            skipped["outside"] += 1
            continue
        try:
            if not file_path.is_file():
                continue
            if file_path.stat().st_size > _MAX_FILE_BYTES:
                skipped["large"] += 1
                continue
        except OSError:
            skipped["unreadable"] += 1
            continue
        if looks_binary(file_path):
            skipped["binary"] += 1
            continue
        files_searched += 1
        found_here = False
        try:
            with open(file_path, "r", encoding="utf-8", errors="replace") as handle:
                for number, line in enumerate(handle, 1):
                    hit = matcher.search(line)
                    if hit is None:
                        continue
                    total += 1
                    found_here = True
                    if len(matches) < limit:
                        matches.append({"path": rel, "line": number, "text": _shorten(line, hit.start())})
        except OSError:
            skipped["unreadable"] += 1
            continue
        if found_here:
            files_with_matches += 1

    output: dict[str, Any] = {
        "query": query,
        "matches": matches,
        "shown": len(matches),
        "total_matches": total,
        "files_with_matches": files_with_matches,
        "files_searched": files_searched,
        "truncated": total > len(matches) or bool(stopped_early),
    }
    notes = []
    if total > len(matches):
        notes.append(
            f"Showing the first {len(matches)} of {total} matching lines; refine the query, "
            f"'path' or 'glob', or raise 'max_matches' (at most {_MAX_MATCHES})."
        )
    if stopped_early:
        notes.append(stopped_early + " Counts are lower bounds.")
    skipped_text = ", ".join(f"{count} {kind}" for kind, count in skipped.items() if count)
    if skipped_text:
        notes.append(f"Skipped files: {skipped_text}.")
    if total == 0 and not stopped_early:
        notes.append("No matches.")
    if notes:
        output["note"] = " ".join(notes)
    return {"success": True, "output": output}
