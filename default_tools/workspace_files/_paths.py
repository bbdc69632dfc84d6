"""Path confinement shared by every tool of the ``workspace_files`` library.

This file holds helpers only (no ``tool_*`` function), so it adds no tool of its
own. The library folder is imported as a package, which is why the tool files
can write ``from ._paths import resolve_in_workspace``.

The workspace is the current working directory: the host changes into the
workspace folder before it runs a tool. Every path a model gives us goes
through :func:`resolve_in_workspace`, which

* resolves it relative to the workspace (absolute paths are accepted only when
  they point inside the workspace),
* follows symbolic links, so a link that points outside is caught, and
* rejects anything that ends up outside the workspace (``..`` escapes included).
"""

from pathlib import Path
from typing import Literal, Optional


class WorkspacePathError(ValueError):
    """A path argument is empty, malformed, outside the workspace or of the wrong kind."""


def workspace_root() -> Path:
    """Return the workspace folder (the current working directory), symlinks resolved."""
    return Path.cwd().resolve()


def is_inside(path: Path, root: Optional[Path] = None) -> bool:
    """Tell whether ``path`` (after resolving symlinks) lies inside the workspace."""
    root = root or workspace_root()
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: symlink loop on some versions
        return False
    return resolved == root or resolved.is_relative_to(root)


def resolve_in_workspace(
    path: str,
    *,
    must_exist: bool = False,
    kind: Optional[Literal["file", "dir"]] = None,
) -> Path:
    """Resolve a user-supplied path and make sure it stays inside the workspace.

    Args:
        path: The path as the model gave it, relative to the workspace or absolute.
        must_exist: Raise if nothing exists at the resolved location.
        kind: When the path exists, require a regular file (``"file"``) or a
            directory (``"dir"``).

    Returns:
        The absolute, symlink-free path.

    Raises:
        WorkspacePathError: With a message that can be shown to the model as is.
    """
    if not isinstance(path, str) or not path.strip():
        raise WorkspacePathError("The path is empty; give a path relative to the workspace, e.g. 'notes.txt'.")
    if "\x00" in path:
        raise WorkspacePathError("The path contains a NUL character.")

    root = workspace_root()
    candidate = Path(path.strip())
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        resolved = candidate.resolve()  # follows symlinks, even dangling ones
    except (OSError, RuntimeError) as exc:
        raise WorkspacePathError(f"Cannot resolve '{path}': {exc}") from None

    if resolved != root and not resolved.is_relative_to(root):
        raise WorkspacePathError(
            f"Access denied: '{path}' is outside the workspace. "
            "Only paths inside the current workspace folder can be used."
        )

    if must_exist and not resolved.exists():
        raise WorkspacePathError(f"'{path}' does not exist in the workspace.")
    if resolved.exists():
        if kind == "file" and not resolved.is_file():
            raise WorkspacePathError(f"'{path}' is not a regular file.")
        if kind == "dir" and not resolved.is_dir():
            raise WorkspacePathError(f"'{path}' is not a directory.")
    return resolved


def display_path(path: Path, root: Optional[Path] = None) -> str:
    """Return ``path`` relative to the workspace with forward slashes ('.' for the root)."""
    root = root or workspace_root()
    try:
        rel = path.relative_to(root)
    except ValueError:
        return str(path)
    text = rel.as_posix()
    return text if text else "."


def looks_binary(path: Path, sample_size: int = 8192) -> bool:
    """Guess whether a file is binary: a NUL byte in its first bytes."""
    try:
        with open(path, "rb") as handle:
            return b"\x00" in handle.read(sample_size)
    except OSError:
        return False


def is_hidden_name(name: str) -> bool:
    """Names skipped by default when walking: dot-files and tool caches."""
    return name.startswith(".") or name in {"__pycache__", "node_modules"}


__all__ = [
    "WorkspacePathError",
    "display_path",
    "is_hidden_name",
    "is_inside",
    "looks_binary",
    "resolve_in_workspace",
    "workspace_root",
]
