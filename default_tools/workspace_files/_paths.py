"""Path helpers shared by every tool of the ``workspace_files`` library.

This file holds helpers only (no ``tool_*`` function), so it adds no tool of its
own. The library folder is imported as a package, which is why the tool files
can write ``from ._paths import ...``.

The workspace is the current working directory: the host changes into the
workspace folder before it runs a tool. Every path a model gives goes through the
host's ``lcp_files`` module, which resolves it one component at a time beneath a
descriptor of the workspace (a symbolic link is followed only while it stays
inside), refuses private files (env files with stored secrets) and writes files
atomically. These helpers add what the tools share on top: walking a folder by
descriptors, and telling text from binary.
"""

import os
import stat
from typing import Iterator, Optional

from lcp_files import PathError as WorkspacePathError
from lcp_files import is_private, open_in


def workspace_root():
    """The workspace folder (the current working directory), as a ``Path``."""
    from pathlib import Path

    return Path(os.getcwd())


def join(folder: str, name: str) -> str:
    """``name`` inside the workspace-relative ``folder`` ('.' for the workspace)."""
    return name if folder in ("", ".") else f"{folder}/{name}"


def looks_binary(handle, sample_size: int = 8192) -> bool:
    """Guess whether an open file is binary (a NUL byte in its first bytes); the file
    is left at its start."""
    sample = handle.read(sample_size)
    handle.seek(0)
    return b"\x00" in sample


def is_hidden_name(name: str) -> bool:
    """Names skipped by default when walking: dot-files and tool caches."""
    return name.startswith(".") or name in {"__pycache__", "node_modules"}


def walk(fd: int, display: str, *, skip_hidden: bool, recursive: bool = True, unreadable: Optional[list] = None) -> Iterator[tuple]:
    """The entries of the open folder ``fd`` in sorted order, then (``recursive``)
    those of each sub-folder in turn, as ``(folder_fd, name, display, status)``
    with links not followed (a link to a folder is an entry, never entered). Each
    sub-folder is opened relative to its parent's descriptor, so a folder swapped
    for a link is never entered. ``fd`` is closed when the walk ends. A folder that
    cannot be read adds one to ``unreadable[0]``."""
    try:
        try:
            with os.scandir(fd) as it:
                names = sorted(entry.name for entry in it)
        except OSError:
            if unreadable is not None:
                unreadable[0] += 1
            return
        folders = []
        for name in names:
            if skip_hidden and is_hidden_name(name):
                continue
            try:
                status = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            path = join(display, name)
            yield fd, name, path, status
            if recursive and stat.S_ISDIR(status.st_mode):
                folders.append((name, path))
        for name, path in folders:
            try:
                sub = open_in(fd, name, folder_only=True)
            except OSError:
                if unreadable is not None:
                    unreadable[0] += 1
                continue
            yield from walk(sub, path, skip_hidden=skip_hidden, unreadable=unreadable)
    finally:
        os.close(fd)


def kind_of(status: os.stat_result) -> str:
    """``"file"``, ``"dir"``, ``"symlink"`` or ``"other"``."""
    if stat.S_ISLNK(status.st_mode):
        return "symlink"
    if stat.S_ISDIR(status.st_mode):
        return "dir"
    if stat.S_ISREG(status.st_mode):
        return "file"
    return "other"


__all__ = [
    "WorkspacePathError",
    "is_hidden_name",
    "is_private",
    "join",
    "kind_of",
    "looks_binary",
    "walk",
    "workspace_root",
]
