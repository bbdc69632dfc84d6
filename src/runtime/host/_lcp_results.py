"""A call's result as plain data: how it ended, its value or its error.

Loaded once as ``_lcp_results``. It owns the reply every entry point gives Rust,
``{"outcome", "output", "error"?, "traceback"?}``, with the outcome said here where it
is known (``returned``, ``reported``, ``raised``, ``refused``, ``invalid``,
``timed_out``, ``out_of_memory``); a value as the JSON data pydantic dumps it to
(models, dataclasses, ``NamedTuple``, enums, the ``datetime`` family, …, without
importing pydantic), or what JSON cannot carry and where; an exception's message and
its traceback without lcp's own frames.
Never: runs tool code.
"""

import base64
import dataclasses
import datetime
import decimal
import enum
import errno
import json
import math
import os
import pathlib
import re
import traceback
import uuid


# Problems listed when a return value cannot be carried by JSON.
_MAX_PROBLEMS = 10
# The folder of lcp's modules when they run from their files (no embedding).
_HERE = None if __file__.startswith("<") else os.path.dirname(os.path.abspath(__file__))


def _outcome(value):
    """The result of a tool that returned ``value``."""
    problems = []
    try:
        output = _jsonable(value, "output", problems)
    except RecursionError:
        problems = ["`output` is nested too deeply or contains itself"]
    if problems:
        return _ended(
            "invalid",
            "the tool's return value cannot be carried by JSON: " + "; ".join(problems[:_MAX_PROBLEMS])
            + (f"; and {len(problems) - _MAX_PROBLEMS} more" if len(problems) > _MAX_PROBLEMS else "")
        )
    if isinstance(value, dict) and (value.get("success") is False or value.get("error")):
        reported = value.get("error")
        if not reported:
            reported = "the tool reported a failure (success: false)"
        elif not isinstance(reported, str):
            reported = _dumps(output.get("error"))
        return {"outcome": "reported", "output": output, "error": reported}
    return {"outcome": "returned", "output": output}


def _resource_contents(value):
    """A resource function's value as a list of contents (SPEC §15): a ``str`` is one
    text, ``bytes`` one base64 blob, a list holds such values or dicts of ``uri``,
    ``mimeType`` and ``text`` or ``blob`` (bytes or base64 text). Anything else is
    left as it is, for Rust to name."""
    def one(item):
        if isinstance(item, str):
            return {"text": item}
        if isinstance(item, (bytes, bytearray, memoryview)):
            return {"blob": base64.b64encode(bytes(item)).decode("ascii")}
        if isinstance(item, dict) and isinstance(item.get("blob"), (bytes, bytearray, memoryview)):
            return {**item, "blob": base64.b64encode(bytes(item["blob"])).decode("ascii")}
        return item

    if isinstance(value, (list, tuple)):
        return [one(item) for item in value]
    return [one(value)]


def _raised(exc):
    """The result of a tool that raised ``exc``."""
    if isinstance(exc, SystemExit):
        return _ended("raised", f"the tool tried to exit the process (SystemExit: {exc.code!r}); lcp kept running", exc)
    return _ended("out_of_memory" if isinstance(exc, MemoryError) else "raised", _message(exc), exc)


# What this process's kernel enforces (SPEC §18), set once by ``host.confine``.
_SANDBOX = {"read_only": False, "offline": False, "confined": False}


def _broken_declaration(exc, tool):
    """What ``tool``, in this process's sandbox (SPEC §18), broke, when ``exc`` is, or
    was caused by, the kernel refusing a write or a network socket: ``tool_x declares
    read_only but tried to write /path``. ``None`` for any other failure."""
    sandbox = _SANDBOX
    if not any(sandbox.values()):
        return None
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, PermissionError) and exc.errno in (errno.EACCES, errno.EPERM):
            paths = [path for path in (exc.filename, exc.filename2) if path is not None]
            written = [path for path in paths if _permitted_to_write(path)]
            if written and sandbox.get("read_only"):
                return f"{tool} declares read_only but tried to write {os.fsdecode(written[-1])}"
            if written and sandbox.get("confined"):
                return (
                    f"{tool} may write only in its workspace, the temp folder and [sandbox] writable, "
                    f"but tried to write {os.fsdecode(written[-1])}"
                )
            # seccomp refuses a socket with EACCES; EPERM without a path is a refused
            # metadata change, special file or signal, left as the kernel said it.
            if not paths and sandbox.get("offline") and exc.errno == errno.EACCES:
                return f"{tool} declares open_world: false but tried to open a network socket"
        exc = exc.__cause__ or exc.__context__
    return None


def _permitted_to_write(path):
    """Whether the file's own permissions let this process write ``path`` (or create
    it): then a refusal came from the sandbox, which ``access(2)`` does not consult."""
    try:
        path = os.fsdecode(path)
        target = path if os.path.lexists(path) else (os.path.dirname(os.path.abspath(path)) or ".")
        return os.access(target, os.W_OK)
    except (OSError, ValueError, TypeError):
        return False


def _timed_out(request, exc=None):
    return _ended("timed_out", f"`{request.get('function')}` timed out", exc)


def _ended(outcome, message, exc=None):
    """A result without a value: how the call ended, why, and the traceback of ``exc``."""
    result = {"outcome": outcome, "output": None, "error": message}
    if exc is not None:
        result["traceback"] = _traceback(exc)
    return result


def _message(exc):
    """``Type: message``, or the type alone when the message is empty."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _traceback(exc):
    """The formatted traceback, starting at the first frame that is not lcp's or importlib's."""
    tb = exc.__traceback__
    while tb is not None and _is_machinery(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def _is_machinery(filename):
    """A frame of lcp's modules (``<lcp …>`` when embedded, this folder's files when
    run on their own) or of the import system."""
    if filename.startswith(("<lcp ", "<frozen importlib")):
        return True
    return _HERE is not None and os.path.dirname(filename) == _HERE


def _dumps(value):
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _jsonable(value, where, problems):
    """``value`` as plain JSON data, as pydantic's ``to_jsonable_python`` makes it:
    tuples (``NamedTuple`` too) and sets become arrays, models their
    ``model_dump(mode="json", by_alias=True)``, dataclasses objects of their fields,
    enums their value, the ``datetime`` family, UUIDs, decimals, paths and IP
    addresses text, ``timedelta`` an ISO 8601 duration and bytes base64 text. pydantic
    is never imported: a model is an object with a ``model_dump`` method. What JSON
    cannot carry (NaN, infinity, other objects) is added to ``problems`` with the
    place it sits."""
    if value is None or value is True or value is False:
        return value
    if isinstance(value, enum.Enum):
        return _jsonable(value.value, where, problems)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            problems.append(f"`{where}` is {value!r}, which JSON cannot represent")
            return None
        return float(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(item, f"{where}[{i}]", problems) for i, item in enumerate(value)]
    if isinstance(value, dict):
        result = {}
        for key, item in value.items():
            text = _key(key)
            if text is None:
                problems.append(f"`{where}` has a key {key!r} of type {type(key).__name__} (keys must be strings)")
                continue
            result[text] = _jsonable(item, f"{where}[{json.dumps(text, ensure_ascii=False)}]", problems)
        return result
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    text = _text(value)
    if text is not None:
        return text
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):  # a pydantic 2 model
        try:
            dumped = dump(mode="json", by_alias=True)
        except Exception as exc:  # pydantic's serialization error, without importing it
            problems.append(f"`{where}` is a {_type_name(value)} model that cannot be dumped: {_message(exc)}")
            return None
        return _jsonable(dumped, where, problems)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: _jsonable(getattr(value, field.name), f"{where}[{json.dumps(field.name)}]", problems)
            for field in dataclasses.fields(value)
        }
    problems.append(f"`{where}` is a {_type_name(value)} object")
    return None


def _type_name(value):
    """``module.Class``, without the private prefix lcp gives a tool's module."""
    module = re.sub(r"_lcp_\d+_", "", type(value).__module__)
    return f"{module}.{type(value).__qualname__}"


def _key(key):
    """A dict key as JSON's text, as pydantic makes it; ``None`` for a key it cannot be."""
    if isinstance(key, enum.Enum):
        key = key.value
    if isinstance(key, str):
        return str.__str__(key)
    if isinstance(key, int) and not isinstance(key, bool):
        return str(int(key))
    return None


def _text(value):
    """The text pydantic makes of a value of a standard library type it writes as a
    string (``datetime`` family, ``timedelta``, ``UUID``, ``Decimal``, paths, IP
    addresses); ``None`` for any other value."""
    if isinstance(value, datetime.datetime):
        return value.replace(tzinfo=None).isoformat() + _offset(value.utcoffset())
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, datetime.time):
        return value.replace(tzinfo=None).isoformat() + _offset(value.utcoffset())
    if isinstance(value, datetime.timedelta):
        return _duration(value)
    if isinstance(value, (uuid.UUID, decimal.Decimal, pathlib.PurePath)):
        return str(value)
    if type(value).__module__ == "ipaddress":
        return str(value)
    return None


def _offset(offset):
    """A UTC offset as pydantic writes it: ``Z``, ``+01:00``; nothing for a naive value."""
    if offset is None:
        return ""
    seconds = int(offset.total_seconds())
    if abs(seconds) < 60:
        return "Z"
    sign = "-" if seconds < 0 else "+"
    hours, minutes = divmod(abs(seconds) // 60, 60)
    return f"{sign}{hours:02d}:{minutes:02d}"


def _duration(delta):
    """A ``timedelta`` as pydantic writes it: ISO 8601, ``P1Y35DT1H1M1.5S``, a year
    being 365 days, ``-`` before a negative one, ``PT0S`` for none."""
    micros = delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds
    sign = "-" if micros < 0 else ""
    days, rest = divmod(abs(micros), 86_400_000_000)
    seconds, micros = divmod(rest, 1_000_000)
    years, days = divmod(days, 365)
    text = sign + "P" + (f"{years}Y" if years else "") + (f"{days}D" if days else "")
    if seconds or micros:
        hours, seconds = divmod(seconds, 3600)
        minutes, seconds = divmod(seconds, 60)
        text += "T" + (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "")
        if micros:
            text += f"{seconds}.{micros:06d}".rstrip("0") + "S"
        elif seconds:
            text += f"{seconds}S"
    elif not (years or days):
        text += "T0S"
    return text
