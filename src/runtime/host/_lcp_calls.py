"""The calls in progress in lcp's embedded interpreter, and what they print.

Loaded once as ``_lcp_calls``, first of lcp's modules after ``lcp_files``. It owns the
``_Call`` record of each call (its id, thread, captured text, whether it may be
stopped), the registries the embedding reads (``_calls``, and ``_direct`` /
``_direct_calls`` for the calls Rust makes itself), which call the running thread
serves (``_current``), and ``sys.stdout`` / ``sys.stderr`` routed to that call.
Never: writes to the process's standard output, or knows what a call runs.
"""

import io
import sys
import threading


class Timeout(BaseException):
    """Raised inside a tool's thread when its call runs out of time.

    A ``BaseException``, so that ``except Exception`` in a tool does not swallow it.
    """


# Text a tool prints is kept up to this many characters per stream and call.
_CAPTURE_LIMIT = 1_000_000
_printed = None  # printed(call_id, stream, text), when the embedding follows output live
_calls = {}  # call id -> _Call, for every call in progress
_local = threading.local()
# Direct calls: thread ident -> [call id, (library, function)] of the call the thread
# runs, call id None between calls; the embedding fills them in around each call.
_direct = {}
_direct_calls = {}  # call id -> _Call, made when a direct call first prints or confirms


class _Call:
    """A call in progress: where its output goes, and whether it may be stopped."""

    __slots__ = ("id", "library", "function", "thread", "stoppable", "text", "kept", "dropped", "outer", "host")

    def __init__(self, call_id, library, function):
        self.host = {}  # what the host offers this call (``Offered`` in Rust)
        self.id = call_id
        self.library = library
        self.function = function
        self.thread = threading.get_ident()
        self.stoppable = False
        self.text = {"out": [], "err": []}
        self.kept = {"out": 0, "err": 0}
        self.dropped = {"out": 0, "err": 0}
        self.outer = None

    def write(self, stream, text):
        room = max(0, _CAPTURE_LIMIT - self.kept[stream])
        if len(text) > room:
            self.dropped[stream] += len(text) - room
            text = text[:room]
        if text:
            self.text[stream].append(text)
            self.kept[stream] += len(text)
            if _printed is not None and self.id is not None:
                _printed(self.id, stream, text)

    def captured(self, stream):
        dropped = self.dropped[stream]
        note = f"\n[lcp: {dropped} more characters were printed and not kept]\n" if dropped else ""
        return "".join(self.text[stream]) + note


def _enter(current):
    current.outer = getattr(_local, "call", None)
    _local.call = current
    if current.id is not None:
        _calls[current.id] = current


def _leave(current):
    _local.call = current.outer
    if current.id is not None:
        _calls.pop(current.id, None)
    # Text a tool wrote to the real streams or their buffers reaches the file
    # descriptors now, while the host still captures them.
    for stream in (sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    _restore_streams()


def _current():
    """The call this thread serves; for a thread a tool started, the only call running."""
    current = getattr(_local, "call", None)
    if current is None:
        marker = _direct.get(threading.get_ident())
        if marker is not None and marker[0] is not None:
            return _direct_call(tuple(marker))
        running = list(_calls.values()) + [m for m in map(tuple, list(_direct.values())) if m[0] is not None]
        if len(running) == 1:
            current = running[0] if isinstance(running[0], _Call) else _direct_call(running[0])
    return current


def _direct_call(marker):
    """The ``_Call`` of a direct call, made the first time it is needed."""
    call_id, (library, function) = marker
    current = _direct_calls.get(call_id)
    if current is None:
        current = _direct_calls[call_id] = _Call(call_id, library, function)
    return current


def _direct_captured(call_id):
    """``(stdout, stderr)`` a direct call printed, and forgets them."""
    current = _direct_calls.pop(call_id, None)
    return ("", "") if current is None else (current.captured("out"), current.captured("err"))


def _restore_streams():
    """A tool that replaced ``sys.stdout`` or ``sys.stderr`` does not keep it."""
    sys.stdout = _STDOUT
    sys.stderr = _STDERR


def _unbuffered(stream):
    try:
        fd = stream.fileno()
        raw = io.FileIO(fd, "w", closefd=False)
    except (AttributeError, OSError, ValueError):
        return stream
    return io.TextIOWrapper(raw, encoding="utf-8", errors="replace", write_through=True)


class _Router(io.TextIOBase):
    """``sys.stdout`` / ``sys.stderr``: text goes to the call of the writing thread.

    Text written outside any call goes to the real standard error, never to the
    standard output.
    """

    def __init__(self, stream):
        self._stream = stream
        self.buffer = _BinaryRouter(self)

    @property
    def encoding(self):
        return "utf-8"

    @property
    def errors(self):
        return "replace"

    def writable(self):
        return True

    def isatty(self):
        return False

    def fileno(self):
        real = sys.__stdout__ if self._stream == "out" else sys.__stderr__
        if real is None:
            raise io.UnsupportedOperation("fileno")
        return real.fileno()

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        current = _current()
        if current is not None:
            current.write(self._stream, text)
        elif sys.__stderr__ is not None:
            try:
                sys.__stderr__.write(text)
            except (OSError, ValueError):
                pass
        return len(text)

    def flush(self):
        pass


class _BinaryRouter(io.RawIOBase):
    def __init__(self, text):
        self._text = text

    def writable(self):
        return True

    def write(self, data):
        self._text.write(bytes(data).decode("utf-8", errors="replace"))
        return len(data)


_STDOUT = _Router("out")
_STDERR = _Router("err")


def install(printed):
    """Routes ``sys.stdout`` and ``sys.stderr`` to the calls; ``printed(call_id, stream,
    text)``, if given, hears what a call prints as it prints it (a worker process
    sends it on, so that it survives the process)."""
    global _printed
    _printed = printed
    # The real streams write through: what a tool writes to them reaches the file
    # descriptors at once, inside its call, with no flush needed after the call.
    sys.__stdout__ = _unbuffered(sys.__stdout__)
    sys.__stderr__ = _unbuffered(sys.__stderr__)
    sys.stdout = _STDOUT
    sys.stderr = _STDERR
