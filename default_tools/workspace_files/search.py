"""Search tool of the ``workspace_files`` library.

A sibling of ``workspace_files.py``: it is discovered after the primary file and its
``tool_*`` functions become tools of the same library. It only reads files, so it needs
no confirmation and defines no hooks; the shared path confinement comes from the
helper module next to it (``from ._paths import ...``). Patterns are matched by the
host's linear-time engine (``lcp_files.search_lines``), so no pattern can stall the
search, and private files (env files with stored secrets) are never searched.
"""

import fnmatch
import os
import stat
import time
from typing import Any

import lcp_files

from ._paths import WorkspacePathError, is_private, looks_binary, walk

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
        regex (bool, optional): Treat query as a regular expression, e.g.
            "^import (os|sys)" (look-around and back-references are not
            supported). Defaults to False.
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
        lcp_files.search_lines(query, "", literal=not regex, ignore_case=not case_sensitive)
    except ValueError as exc:
        return {"success": False, "error": f"Invalid regular expression {query!r}: {exc}"}
    try:
        base, shown_path = lcp_files.status(path)
        shown_name = shown_path.rsplit("/", 1)[-1]
        if base is None:
            raise WorkspacePathError(f"'{path}' does not exist in the workspace.")
        if stat.S_ISDIR(base.st_mode):
            fd, shown = lcp_files.open_folder(path)
            files = (
                (folder, name, rel)
                for folder, name, rel, status in walk(fd, shown, skip_hidden=True)
                if stat.S_ISREG(status.st_mode) or stat.S_ISLNK(status.st_mode)
            )
        else:
            files = iter([(None, shown_name, shown_path)])
    except WorkspacePathError as exc:
        return {"success": False, "error": str(exc)}
    limit = max(1, min(_MAX_MATCHES, int(max_matches)))
    match_path = "/" in glob

    matches: list[dict[str, Any]] = []
    total = 0
    files_with_matches = 0
    files_searched = 0
    skipped = {"binary": 0, "large": 0, "unreadable": 0, "outside": 0, "private": 0}
    stopped_early = ""
    deadline = time.monotonic() + _TIME_BUDGET_SECONDS

    for folder, name, rel in files:
        if not fnmatch.fnmatch(rel if match_path else name, glob):
            continue
        if files_searched >= _MAX_FILES_SCANNED:
            stopped_early = f"Stopped after searching {_MAX_FILES_SCANNED} files; narrow 'path' or 'glob'."
            break
        if time.monotonic() > deadline:
            stopped_early = f"Stopped after {_TIME_BUDGET_SECONDS:.0f} seconds; narrow 'path' or 'glob'."
            break
        if is_private(name):
            skipped["private"] += 1
            continue
        try:
            if folder is None or stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode):
                # A link is searched through its path, which must stay inside.
                handle, _ = lcp_files.open_file(rel)
            else:
                handle = lcp_files.open_in(folder, name)
        except WorkspacePathError as exc:
            if "outside" in str(exc):
                skipped["outside"] += 1
            continue
        except OSError:
            skipped["unreadable"] += 1
            continue
        with handle:
            try:
                if os.fstat(handle.fileno()).st_size > _MAX_FILE_BYTES:
                    skipped["large"] += 1
                    continue
                if looks_binary(handle):
                    skipped["binary"] += 1
                    continue
                text = handle.read(_MAX_FILE_BYTES + 1).decode("utf-8", errors="replace")
            except OSError:
                skipped["unreadable"] += 1
                continue
        files_searched += 1
        hits = lcp_files.search_lines(query, text, literal=not regex, ignore_case=not case_sensitive)
        if hits:
            files_with_matches += 1
            total += len(hits)
            lines = text.split("\n") if len(matches) < limit else ()
            for number, column in hits[: max(0, limit - len(matches))]:
                matches.append({"path": rel, "line": number, "text": _shorten(lines[number - 1], column)})

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
