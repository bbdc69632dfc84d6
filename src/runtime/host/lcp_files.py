"""lcp_files: files of the workspace, confined by the kernel and written atomically.

The host gives every tool this module (``import lcp_files``); the built-in libraries
read and write the workspace only through it (SPEC §17). The workspace is the
working directory the host gives the call.

* A path is resolved one component at a time relative to a descriptor of the
  workspace, never by its text: each folder is opened with ``O_NOFOLLOW |
  O_DIRECTORY`` relative to the folder before it and held open, and a symbolic link
  is read and followed only while it stays beneath the workspace (an absolute link
  is followed when it names a place inside the workspace). ``..`` above the
  workspace, or a link that leaves it, is refused. Swapping a folder for a symbolic
  link after it was checked reaches nothing outside: the folders are already open,
  and the last name is opened with ``O_NOFOLLOW`` too.
* Writes are atomic: a temporary file beside the target, written whole, synced and
  renamed over it (or linked in its place when it must not exist yet); the folder is
  synced after. A crash at any moment leaves the old content or the new one.
* Files the tools keep for themselves (env files, which hold stored secrets) are
  private: :func:`is_private` names them and :func:`open_file` refuses them unless
  the caller says it is the tool that keeps them.

Every failure a model can cause is a :class:`PathError` whose text can be shown as
it is.
"""

import errno
import os
import stat as _stat
import secrets

_MAX_LINKS = 40  # symbolic links followed in one resolution, as the kernel's own limit
_MAX_PATH = 4096  # characters: longer paths are refused before any system call
_TEMP_PREFIX = ".lcp-tmp-"


class PathError(ValueError):
    """A path is malformed, outside the workspace, private, or of the wrong kind."""


def is_private(name):
    """Whether a file name is one the tools keep for themselves: an env file
    (``.env``, ``.env.local``, ``prod.env``), which may hold stored secrets, or a
    temporary file of an atomic write."""
    return name == ".env" or name.startswith(".env.") or name.endswith(".env") or name.startswith(_TEMP_PREFIX)


class MissingFolder(PathError):
    """A folder on the way to a path does not exist; ``display`` is the whole path
    from the workspace, as it would be once the folder is made."""

    def __init__(self, message, display):
        super().__init__(message)
        self.display = display


class Place:
    """Where a path led: the open folder that holds it, its last name, and its
    path from the workspace (``display``). ``folder`` is closed with the place."""

    __slots__ = ("folder", "name", "display", "_closed")

    def __init__(self, folder, name, display):
        self.folder = folder
        self.name = name
        self.display = display
        self._closed = False

    def stat(self):
        """The entry's status (links not followed), or ``None`` when nothing is there."""
        if self.name is None:
            return os.fstat(self.folder)
        try:
            return os.stat(self.name, dir_fd=self.folder, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def close(self):
        if not self._closed:
            self._closed = True
            os.close(self.folder)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()


def _checked_text(path):
    if not isinstance(path, str) or not path.strip():
        raise PathError("The path is empty; give a path relative to the workspace, e.g. 'notes.txt'.")
    if "\x00" in path:
        raise PathError("The path contains a NUL character.")
    if len(path) > _MAX_PATH:
        raise PathError(f"The path is {len(path)} characters long; at most {_MAX_PATH} are accepted.")
    return path.strip()


def _open_folder(name, parent):
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)


def resolve(path, *, create_folders=False):
    """Resolves ``path`` beneath the workspace and returns its :class:`Place`.

    The last component may be missing (a file to create); a missing folder before it
    is created when ``create_folders`` is true, else refused. A path naming the
    workspace itself gives a place whose ``name`` is ``None``."""
    text = _checked_text(path)
    root_path = os.getcwd()
    if os.path.isabs(text):
        relative = os.path.relpath(os.path.normpath(text), root_path)
        if relative == ".." or relative.startswith("../"):
            raise PathError(_outside(path))
        text = relative
    stack = [os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
    names = []
    pending = [part for part in text.split("/") if part not in ("", ".")]
    pending.reverse()
    links = 0
    try:
        while pending:
            part = pending.pop()
            if part == "..":
                if len(stack) == 1:
                    raise PathError(_outside(path))
                os.close(stack.pop())
                names.pop()
                continue
            try:
                status = os.stat(part, dir_fd=stack[-1], follow_symlinks=False)
            except FileNotFoundError:
                status = None
            except OSError as exc:
                raise PathError(f"Cannot resolve '{path}': {_reason(exc)}") from None
            if status is not None and _stat.S_ISLNK(status.st_mode):
                links += 1
                if links > _MAX_LINKS:
                    raise PathError(f"Cannot resolve '{path}': too many levels of symbolic links.")
                target = os.readlink(part, dir_fd=stack[-1])
                if target.startswith("/"):
                    relative = os.path.relpath(os.path.normpath(target), root_path)
                    if relative == ".." or relative.startswith("../"):
                        raise PathError(_outside(path, link=True))
                    while len(stack) > 1:
                        os.close(stack.pop())
                    names.clear()
                    target = relative
                pending.extend(reversed([p for p in target.split("/") if p not in ("", ".")]))
                continue
            if not pending:
                folder = stack.pop()
                return Place(folder, part, "/".join(names + [part]))
            if status is None:
                if not create_folders:
                    raise MissingFolder(
                        f"The folder '{'/'.join(names + [part])}' does not exist in the workspace.",
                        "/".join(names + [part] + pending[::-1]),
                    )
                try:
                    os.mkdir(part, dir_fd=stack[-1])
                except FileExistsError:
                    pass
            elif not _stat.S_ISDIR(status.st_mode):
                raise PathError(f"'{'/'.join(names + [part])}' is not a folder.")
            try:
                stack.append(_open_folder(part, stack[-1]))
            except OSError as exc:
                raise PathError(_changed(path, exc)) from None
            names.append(part)
        folder = stack.pop()
        return Place(folder, None, "/".join(names) or ".")
    finally:
        for fd in stack:
            os.close(fd)


def _outside(path, link=False):
    how = " through a symbolic link" if link else ""
    return (
        f"Access denied: '{path}' leads outside the workspace{how}. "
        "Only paths inside the current workspace folder can be used."
    )


def _reason(exc):
    return exc.strerror or str(exc)


def _changed(path, exc):
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return f"'{path}' changed while it was being opened (a folder became a link or a file); nothing was done."
    return f"Cannot open '{path}': {_reason(exc)}"


def _refuse_private(place, path, private_ok):
    if place.name is not None and is_private(place.name) and not private_ok:
        raise PathError(
            f"'{path}' is a private file (env files hold stored secrets); the file tools do not read or change it."
        )


def open_file(path, *, private_ok=False):
    """Opens an existing regular file of the workspace for reading, in binary mode.

    Returns ``(file, display)``. A folder, a device or a FIFO is refused (it is never
    opened in a way that could block), and so is a private file unless
    ``private_ok``."""
    with resolve(path) as place:
        if place.name is None:
            raise PathError(f"'{path}' is a folder; give a file path.")
        _refuse_private(place, path, private_ok)
        try:
            fd = os.open(place.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=place.folder)
        except FileNotFoundError:
            raise PathError(f"'{path}' does not exist in the workspace.") from None
        except OSError as exc:
            raise PathError(_changed(path, exc)) from None
        status = os.fstat(fd)
        if not _stat.S_ISREG(status.st_mode):
            os.close(fd)
            kind = "a folder" if _stat.S_ISDIR(status.st_mode) else "not a regular file"
            raise PathError(f"'{path}' is {kind}.")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb"), place.display


def open_folder(path):
    """Opens a folder of the workspace; returns ``(descriptor, display)``. The caller
    closes the descriptor (``os.scandir`` and :func:`open_in` take it)."""
    with resolve(path) as place:
        if place.name is None:
            return os.dup(place.folder), place.display
        try:
            return _open_folder(place.name, place.folder), place.display
        except FileNotFoundError:
            raise PathError(f"'{path}' does not exist in the workspace.") from None
        except OSError as exc:
            if exc.errno == errno.ENOTDIR:
                raise PathError(f"'{path}' is not a folder.") from None
            raise PathError(_changed(path, exc)) from None


def open_in(folder, name, *, folder_only=False):
    """Opens the entry ``name`` of an open folder without following a link: a folder
    (a descriptor) when ``folder_only``, else a regular file for reading (a binary
    file object). Raises ``OSError`` for anything else."""
    if folder_only:
        return _open_folder(name, folder)
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    if not _stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def status(path):
    """``(stat or None, display)`` of a path of the workspace; ``None`` also when a
    folder on its way is missing. A link at its end is followed while it stays
    inside, like every other component."""
    try:
        place = resolve(path)
    except MissingFolder as missing:
        return None, missing.display
    with place:
        return place.stat(), place.display


def write_atomically(path, data, *, overwrite=True, create_folders=True, mode=0o644, private_ok=False):
    """Replaces (or creates) a file of the workspace with ``data`` (bytes), atomically.

    With ``overwrite`` false, an existing file is left alone and ``FileExistsError``
    raised. An existing file keeps its permissions; a new one gets ``mode``. Returns
    ``(created, display)``."""
    with resolve(path, create_folders=create_folders) as place:
        if place.name is None:
            raise PathError(f"'{path}' is a folder; give a file path.")
        _refuse_private(place, path, private_ok)
        before = place.stat()
        if before is not None and not _stat.S_ISREG(before.st_mode):
            raise PathError(f"'{path}' exists and is not a regular file.")
        if before is not None and not overwrite:
            raise FileExistsError(errno.EEXIST, "exists", path)
        temp = _TEMP_PREFIX + secrets.token_hex(8)
        fd = os.open(
            temp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            _stat.S_IMODE(before.st_mode) if before is not None else mode,
            dir_fd=place.folder,
        )
        try:
            try:
                if before is not None:
                    os.fchmod(fd, _stat.S_IMODE(before.st_mode))
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fsync(fd)
            finally:
                os.close(fd)
            if overwrite:
                os.rename(temp, place.name, src_dir_fd=place.folder, dst_dir_fd=place.folder)
            else:
                # A link fails if the name appeared meanwhile; a rename would replace it.
                os.link(temp, place.name, src_dir_fd=place.folder, dst_dir_fd=place.folder, follow_symlinks=False)
                os.unlink(temp, dir_fd=place.folder)
        except BaseException:
            try:
                os.unlink(temp, dir_fd=place.folder)
            except OSError:
                pass
            raise
        os.fsync(place.folder)
        return before is None, place.display


def search_lines(pattern, text, *, literal=False, ignore_case=False):
    """The lines of ``text`` (split at ``\\n``) that a regular expression matches, as
    ``[(line number from 1, column of the first match)]``, in time linear in the text
    whatever the pattern (the host's engine, not ``re``: a pattern such as ``(a+)+$``
    cannot stall a call). Look-around and back-references are refused with a
    ``ValueError`` that says so, as is any pattern that does not compile."""
    return _search_lines(pattern, text, literal, ignore_case)


def _search_lines(pattern, text, literal, ignore_case):  # replaced by the host's engine
    raise RuntimeError("lcp_files.search_lines needs lcp's host")


__all__ = [
    "MissingFolder",
    "PathError",
    "Place",
    "is_private",
    "open_file",
    "open_folder",
    "open_in",
    "resolve",
    "search_lines",
    "status",
    "write_atomically",
]
