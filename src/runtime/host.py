"""lcp's Python side of running tools (SPEC §5).

Loaded once into the embedded interpreter as the module ``_lcp_host``, after
``_lcp_arguments`` (``_lcp_arguments.py``: reading a tool's parameters and converting
JSON arguments to the annotated types). It owns: importing a tool file under a
private module name (a library folder becomes a private package), the library hooks,
passing the converted arguments, the host objects a tool is given (SPEC §9: the confirm handler,
``user_interaction_handler``, ``lollms_client_instance``, ``tool_context``, and
``logging`` records), running the tool with what it prints captured, and turning
its result or its exception into plain data.

Every host object reaches the host through one function given to ``install``,
``host(request_json) -> answer_json``, with the id of the call it belongs to; the
host answers with that call's callbacks (a terminal, an MCP client, a Rust closure).

``call`` takes and returns JSON text, and the only host objects it holds are the
functions given to ``install``; nothing in ``call`` depends on living in the same
process as the registry, so a worker process can serve the same requests. For warm
calls the embedding also calls tool functions itself (the *direct* path): ``direct``
hands it a function whose arguments need no conversion beyond a number's type, and
the ``_direct_*`` helpers route what such a call prints and turn what Rust cannot
into a reply. Nothing here writes to the process's standard output.
"""

import importlib.machinery
import importlib.util
import inspect
import io
import itertools
import json
import logging
import math
import os
import re
import signal
import sys
import threading
import traceback
import types
import typing
import urllib.parse
from pathlib import Path

from _lcp_arguments import (  # noqa: E402 - loaded before this module
    _AS_IS,
    _ArgumentError,
    _DICTS,
    _FieldDefault,
    _HOST_OBJECTS,
    _LISTS,
    _NONE,
    _arguments,
    _plan,
    _reshapes,
)


class Timeout(BaseException):
    """Raised inside a tool's thread when its call runs out of time.

    A ``BaseException``, so that ``except Exception`` in a tool does not swallow it.
    """


# Text a tool prints is kept up to this many characters per stream and call.
_CAPTURE_LIMIT = 1_000_000
# Problems listed when a return value cannot be carried by JSON.
_MAX_PROBLEMS = 10

_host = None  # host(request_json) -> answer_json, see ``_ask``
_printed = None  # printed(call_id, stream, text), when the embedding follows output live
_lock = threading.Lock()
_names = itertools.count(1)
_libraries = {}  # file path -> _Library (loaded, or rejected with its error)
_load_locks = {}  # file path -> lock held while that file is imported
_packages = {}  # library folder -> private package name
_calls = {}  # call id -> _Call, for every call in progress
_local = threading.local()
# Direct calls: thread ident -> [call id, (library, function)] of the call the thread
# runs, call id None between calls; the embedding fills them in around each call.
_direct = {}
_direct_calls = {}  # call id -> _Call, made when a direct call first prints or confirms


# --------------------------------------------------------------------------- #
# Entry points                                                                 #
# --------------------------------------------------------------------------- #


def install(host, before_chdir=None, printed=None):
    """Called once: ``host(request_json) -> answer_json`` asks the host (see ``_ask``);
    ``before_chdir()``, if given, is called before a tool changes the working directory
    (``os.chdir``, ``os.fchdir``), so the host can restore it; ``printed(call_id,
    stream, text)``, if given, hears what a call prints as it prints it (a worker
    process sends it on, so that it survives the process)."""
    global _host, _printed
    _host = host
    _printed = printed
    sys.dont_write_bytecode = True  # never litter tool folders with __pycache__
    # The real streams write through: what a tool writes to them reaches the file
    # descriptors at once, inside its call, with no flush needed after the call.
    sys.__stdout__ = _unbuffered(sys.__stdout__)
    sys.__stderr__ = _unbuffered(sys.__stderr__)
    sys.stdout = _STDOUT
    sys.stderr = _STDERR
    if before_chdir is not None:
        os.chdir = _watched(os.chdir, before_chdir)
        os.fchdir = _watched(os.fchdir, before_chdir)
    logging.root.addHandler(_LOG_RELAY)
    _set_log_level(logging.INFO)


def install_exit_hook(hook):
    """Worker processes: ``hook()`` runs in the tool's thread before a tool ends the
    process itself (``os._exit``, a signal to its own process), so lcp learns which
    call did it and fails only that one."""
    real_exit, real_kill, real_raise = os._exit, os.kill, signal.raise_signal
    fatal = {signal.SIGKILL, signal.SIGTERM, signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGINT, signal.SIGQUIT}

    def _exit(status):
        hook()
        real_exit(status)

    def kill(pid, sig):
        if pid in (0, os.getpid()) and sig in fatal:
            hook()
        return real_kill(pid, sig)

    def raise_signal(sig):
        if sig in fatal:
            hook()
        return real_raise(sig)

    os._exit, os.kill, signal.raise_signal = _exit, kill, raise_signal


def _unbuffered(stream):
    try:
        fd = stream.fileno()
        raw = io.FileIO(fd, "w", closefd=False)
    except (AttributeError, OSError, ValueError):
        return stream
    return io.TextIOWrapper(raw, encoding="utf-8", errors="replace", write_through=True)


def _watched(change, before):
    def watched(path):
        before()
        return change(path)

    watched.__name__ = change.__name__
    watched.__doc__ = change.__doc__
    return watched


def _path(wire):
    """A path as the embedding sends it (lcp's path encoding: ``%`` and the bytes that
    are not UTF-8 percent-escaped): the path Python uses for those bytes."""
    if "%" in wire:
        return os.fsdecode(urllib.parse.unquote_to_bytes(wire))
    return wire


def add_site_dir(path):
    """Makes a virtual environment's site-packages importable, ahead of the
    interpreter's own (as inside the environment)."""
    import site

    if path in sys.path:
        return
    before = list(sys.path)
    site.addsitedir(path)
    added = [entry for entry in sys.path if entry not in before]
    sys.path[:] = added + before


def call(request_text):
    """Runs a tool (``kind: "tool"``) or a prompt provider (``kind: "provider"``).

    Returns ``{"ok", "output", "error"?, "traceback"?, "timed_out"?, "stdout", "stderr"}``.
    """
    request = json.loads(request_text)
    for key in ("file", "package"):
        if request.get(key) is not None:
            request[key] = _path(request[key])
    current = _Call(request.get("call_id"), request.get("library"), request.get("function"))
    current.host = request.get("host") or {}
    _set_log_level(current.host.get("log_level") or logging.INFO)
    _enter(current)
    try:
        result = _run(request, current)
    except Timeout as exc:
        result = _timed_out(request, exc)
    except BaseException as exc:  # a failure of this module itself, still a result
        result = _failure(f"lcp could not run `{request.get('function')}`: {_message(exc)}", exc)
    finally:
        _leave(current)
    result["stdout"] = current.captured("out")
    result["stderr"] = current.captured("err")
    return _dumps(result)


def stop(call_id):
    """Raises ``Timeout`` in the thread running ``call_id`` if it is running tool code.

    Returns whether it did. Called with the GIL held, so the check and the injection
    cannot race with the call leaving tool code.
    """
    current = _calls.get(call_id)
    if current is not None:
        if not current.stoppable:
            return False
        thread = current.thread
    else:
        # A direct call: its marker names it only while the tool function runs.
        thread = next((t for t, marker in list(_direct.items()) if marker[0] == call_id), None)
        if thread is None:
            return False
    import ctypes

    set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
    set_async_exc.argtypes = (ctypes.c_ulong, ctypes.py_object)
    return set_async_exc(thread, Timeout) == 1


def rebind():
    """Calls ``set_confirm_handler`` again on every loaded module that defines it.

    Returns a JSON list of ``{"file", "error"}`` for the hooks that raised.
    """
    problems = []
    current = _Call(None, None, "set_confirm_handler")
    _enter(current)
    try:
        for path, library in list(_libraries.items()):
            hook = getattr(library.module, "set_confirm_handler", None)
            # A config-defined tool's module is no tool library: it has no bridge.
            if library.module is None or library.bridge is None or not callable(hook):
                continue
            try:
                hook(library.bridge)
            except BaseException as exc:
                problems.append({"file": path, "error": f"set_confirm_handler failed: {_message(exc)}"})
    finally:
        _leave(current)
    return json.dumps(problems)


def forget(paths_json):
    """Drops the modules of these files: their next call imports them again."""
    paths = {_path(path) for path in json.loads(paths_json)}
    with _lock:
        for path in paths:
            _libraries.pop(path, None)
        for name, module in list(sys.modules.items()):
            if name.startswith("_lcp_") and getattr(module, "__file__", None) in paths:
                del sys.modules[name]


# --------------------------------------------------------------------------- #
# One call                                                                     #
# --------------------------------------------------------------------------- #


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


def _run(request, current):
    library, timed_out = _library(request, current)
    if timed_out:
        return _timed_out(request)
    if library.error is not None:
        return {"ok": False, "output": None, "error": library.error, "traceback": library.traceback}
    function = getattr(library.module, request["function"], None)
    if not callable(function):
        if request.get("module"):
            return _failure(f"the module `{request['module']['name']}` has no function `{request['function']}`")
        return _failure(f"`{request['function']}` is not a function of {request['file']} once the module has run")
    if request.get("kind") == "provider":
        return _provide(function, current)
    return _tool(function, request, current)


def _tool(function, request, current):
    try:
        objects = _HostObjects(request.get("library"), request.get("workspace_path"))
        args, injected = request.get("args") or {}, request.get("injected") or ()
        if request.get("module"):
            positional, keywords = _module_arguments(function, args, request["module"]["parameters"], injected, objects)
        else:
            positional, keywords = _arguments(function, args, injected, objects)
    except _ArgumentError as exc:
        return _failure(str(exc))
    try:
        value = _invoke(current, function, positional, keywords)
        _settle()
    except Timeout:
        raise
    except BaseException as exc:
        return _raised(exc)
    return _outcome(value)


def _module_arguments(function, args, parameters, injected, objects):
    """A config-defined tool's arguments (SPEC §14): by name when the function has
    parameters of every name given (or takes ``**kwargs``), converted by its own
    annotations; else by position in the declared order. Host objects it names are
    passed by name either way."""
    try:
        signature = inspect.signature(function).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        signature = None
    if signature is not None:
        by_name = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        takes_keywords = any(p.kind == inspect.Parameter.VAR_KEYWORD for p in signature.values())
        if takes_keywords or all(name in signature and signature[name].kind in by_name for name in args):
            return _arguments(function, args, injected, objects)
    positional = [args[name] for name in parameters if name in args]
    keywords = {}
    if signature is not None and objects is not None:
        for name in _HOST_OBJECTS:
            if name in injected and name in signature:
                keywords[name] = objects.get(name)
    return positional, keywords


def _raised(exc):
    """The result of a tool that raised ``exc``."""
    if isinstance(exc, SystemExit):
        return _failure(f"the tool tried to exit the process (SystemExit: {exc.code!r}); lcp kept running", exc)
    return _failure(_message(exc), exc)


def _outcome(value):
    """The result of a tool that returned ``value``."""
    problems = []
    try:
        output = _jsonable(value, "output", problems)
    except RecursionError:
        problems = ["`output` is nested too deeply or contains itself"]
    if problems:
        return _failure(
            "the tool's return value cannot be carried by JSON: " + "; ".join(problems[:_MAX_PROBLEMS])
            + (f"; and {len(problems) - _MAX_PROBLEMS} more" if len(problems) > _MAX_PROBLEMS else "")
        )
    if isinstance(value, dict) and (value.get("success") is False or value.get("error")):
        reported = value.get("error")
        if not reported:
            reported = "the tool reported a failure (success: false)"
        elif not isinstance(reported, str):
            reported = _dumps(output.get("error"))
        return {"ok": False, "output": output, "error": reported}
    return {"ok": True, "output": output}


def _provide(function, current):
    try:
        value = _invoke(current, function, (), {})
        _settle()
    except Timeout:
        raise
    except BaseException as exc:
        return _failure(_message(exc), exc)
    if not isinstance(value, str):
        return _failure(f"returned {type(value).__name__}, not a string")
    return {"ok": True, "output": str.__str__(value)}


def _invoke(current, function, positional, keywords):
    current.stoppable = True
    try:
        value = function(*positional, **keywords)
        if inspect.isawaitable(value):
            value = _run_awaitable(value)
        return value
    finally:
        current.stoppable = False


async def _awaited(awaitable):
    return await awaitable


def _run_awaitable(awaitable):
    """Runs an ``async def`` tool's awaitable to its end. ``asyncio`` is imported here,
    on first use: it is a large import that most workers never need."""
    import asyncio

    return asyncio.run(_awaited(awaitable))


def _settle():
    """A function call: a ``Timeout`` injected just before the tool returned is
    delivered here, inside the caller's ``try``, never later in host code."""


def _timed_out(request, exc=None):
    result = {"ok": False, "output": None, "error": f"`{request.get('function')}` timed out", "timed_out": True}
    if exc is not None:
        result["traceback"] = _traceback(exc)
    return result


def _failure(message, exc=None):
    result = {"ok": False, "output": None, "error": message}
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
    return filename == __file__ or filename.startswith("<frozen importlib")


def _dumps(value):
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


# --------------------------------------------------------------------------- #
# Direct calls                                                                 #
# --------------------------------------------------------------------------- #


def direct(path, function, injected):
    """``(function, [(parameter, coercion)], takes_any_keyword, namespace)`` for a tool
    the embedding may call itself, with no JSON text and none of this module's code in
    between (``namespace``: the module's, where the embedding checks before each call
    that the name still holds the function); ``None`` while the library of ``path`` is
    not loaded, ``False`` when every call of the tool needs ``call``.

    That is when the library failed to load, the tool is not a plain ``def``
    function, takes a positional-only parameter, an injected one without a default or
    a host object (by name, or through ``**kwargs``), a ``Field`` alias or default,
    or a parameter's type asks for
    more than a number's type (``coercion`` is ``"int"``, ``"float"`` or ``"none"``,
    see ``_coercion``).
    """
    library = _libraries.get(path)
    if library is None:
        return None
    tool = getattr(library.module, function, None)
    if not isinstance(tool, types.FunctionType) or inspect.iscoroutinefunction(tool):
        return False
    plan = _plan(tool)
    if plan.var_keyword and any(name in injected for name in _HOST_OBJECTS):
        return False
    parameters = []
    for name, key, kind, hint, default in plan.parameters:
        coercion = _coercion(hint)
        if coercion is None or kind == inspect.Parameter.POSITIONAL_ONLY:
            return False
        if key != name or isinstance(default, _FieldDefault):  # an alias, or a default pydantic gives
            return False
        if name in injected and (default is inspect.Parameter.empty or name in _HOST_OBJECTS):
            return False
        parameters.append((name, coercion))
    if any(_coercion(hint) != "none" for hint in plan.keyword_hints.values()):
        return False
    return tool, parameters, plan.var_keyword, vars(library.module)


def _coercion(hint):
    """What ``_convert`` does to a valid JSON value for ``hint`` when that is at most a
    number's type: ``"int"`` (an integral float becomes an int), ``"float"`` (an int
    becomes a float), ``"none"``; ``None`` for every other hint."""
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        return None if _reshapes(hint) else _coercion(typing.get_args(hint)[0])
    if origin is typing.Union or origin is types.UnionType:
        arms = [arm for arm in typing.get_args(hint) if arm is not _NONE]
        return _coercion(arms[0]) if len(arms) == 1 else None
    if hint is int:
        return "int"
    if hint is float:
        return "float"
    if origin is typing.Literal or any(hint is plain for plain in _AS_IS):
        return "none"
    if origin in _LISTS or origin in _DICTS:
        args = typing.get_args(hint)
        return "none" if all(_coercion(arg) == "none" for arg in args[-1:]) else None
    return None


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


def _direct_result(value):
    """The reply (JSON text) for what a direct call returned, when the embedding does
    not take it as it is: an awaitable, a value JSON cannot carry as it is, a reported
    failure."""
    try:
        if inspect.isawaitable(value):
            value = _run_awaitable(value)
        result = _outcome(value)
    except BaseException as exc:
        result = _raised(exc)
    return _dumps(result)


def _direct_failure(exc, tb):
    """The reply (JSON text) for a direct call that raised ``exc`` (``tb``: its traceback)."""
    if tb is not None:
        exc = exc.with_traceback(tb)
    return _dumps(_raised(exc))


def _restore_streams():
    """A tool that replaced ``sys.stdout`` or ``sys.stderr`` does not keep it."""
    sys.stdout = _STDOUT
    sys.stderr = _STDERR


# --------------------------------------------------------------------------- #
# Loading and hooks                                                            #
# --------------------------------------------------------------------------- #


class _Library:
    __slots__ = ("module", "error", "traceback", "bridge")

    def __init__(self, module=None, error=None, traceback=None, bridge=None):
        self.module = module
        self.error = error
        self.traceback = traceback
        self.bridge = bridge  # the confirm handler the library was given


def _library(request, current):
    """The loaded (or rejected) library of the request's file; loads it once per process.

    Returns ``(library, timed_out)``; a load stopped by a timeout is not remembered. A
    config-defined tool's module (``request["module"]``) is imported by name: one
    that does not import is not remembered either, so installing it is enough.
    """
    target = request.get("module")
    if target:
        return _module_library(target, current)
    path = request["file"]
    library = _libraries.get(path)
    if library is not None:
        return library, False
    with _lock:
        load_lock = _load_locks.setdefault(path, threading.Lock())
    with load_lock:
        library = _libraries.get(path)
        if library is not None:
            return library, False
        current.stoppable = True
        try:
            library = _load(request)
            _settle()
        except Timeout:
            return None, True
        finally:
            current.stoppable = False
        _libraries[path] = library
        return library, False


def _module_library(target, current):
    name = target["name"]
    library = _libraries.get(("module", name))
    if library is not None:
        return library, False
    with _lock:
        for folder in reversed([_path(entry) for entry in target.get("path") or ()]):
            if folder not in sys.path:
                sys.path.insert(0, folder)
    current.stoppable = True
    try:
        module = importlib.import_module(name)
        _settle()
    except Timeout:
        return None, True
    except BaseException as exc:
        return _Library(error=f"the module `{name}` could not be imported: {_message(exc)}", traceback=_traceback(exc)), False
    finally:
        current.stoppable = False
    library = _Library(module=module)
    _libraries[("module", name)] = library
    return library, False


def _load(request):
    path = request["file"]
    bridge = _Bridge(request.get("library"))
    try:
        module = _import(path, request.get("package"))
    except Timeout:
        raise
    except BaseException as exc:
        return _Library(error=f"the library {path} could not be imported: {_message(exc)}", traceback=_traceback(exc))
    try:
        _init(module, request, bridge)
    except Timeout:
        raise
    except BaseException as exc:
        return _Library(error=f"the library {path} was rejected: {_message(exc)}", traceback=_traceback(exc))
    return _Library(module=module, bridge=bridge)


def _import(path, package):
    """Imports ``path`` under a private name; a library folder becomes a private package,
    so ``from . import helper`` finds the folder's own ``helper.py``."""
    stem = _identifier(os.path.splitext(os.path.basename(path))[0])
    folder = os.path.dirname(path)
    if not package and os.path.isfile(os.path.join(folder, os.path.basename(folder) + ".py")):
        package = folder  # a file of a library folder `X/` given on its own
    if package:
        parent = _package(package)
        name = f"{parent}.{stem}"
        existing = sys.modules.get(name)
        if existing is not None and getattr(existing, "__file__", None) == path:
            return existing  # already imported by a sibling's relative import
    else:
        parent = None
        with _lock:
            name = f"_lcp_{next(_names)}_{stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    if parent is not None:
        setattr(sys.modules[parent], stem, module)
    return module


def _package(folder):
    with _lock:
        name = _packages.get(folder)
        if name is None or name not in sys.modules:
            name = f"_lcp_{next(_names)}_{_identifier(os.path.basename(folder.rstrip(os.sep)))}"
            spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
            spec.submodule_search_locations = [folder]
            sys.modules[name] = importlib.util.module_from_spec(spec)
            _packages[folder] = name
        return name


def _identifier(text):
    text = re.sub(r"\W", "_", text)
    return text if text and not text[0].isdigit() else f"_{text}"


def _init(module, request, bridge):
    """``set_confirm_handler`` (when the host has a handler), ``set_user_interaction_handler``,
    then ``init_tools_library``."""
    has_handler = bool((request.get("host") or {}).get("confirm"))
    interaction = _UserInteraction(request.get("library"))
    hook = getattr(module, "set_confirm_handler", None)
    if has_handler and callable(hook):
        hook(bridge)
    hook = getattr(module, "set_user_interaction_handler", None)
    if callable(hook):
        hook(interaction)
    init = getattr(module, "init_tools_library", None)
    if not callable(init):
        return
    config = dict(request.get("config") or {})
    config["autonomy_level"] = request.get("autonomy_level") or "safe"
    config["confirm_handler"] = bridge if has_handler else None
    config["user_interaction_handler"] = interaction
    if _takes_positional(init):
        init(config)
    else:
        init()


def _takes_positional(function):
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return True
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    return any(p.kind in kinds for p in parameters)


class _Bridge:
    """The confirm handler a library sees: any arguments in, ``(decision, reason)`` out."""

    def __init__(self, library):
        self.library = library

    def __call__(self, *args, **kwargs):
        answer = _ask(
            "confirm",
            self.library,
            args=[_plain(a) for a in args],
            kwargs={str(k): _plain(v) for k, v in kwargs.items()},
        )
        return (answer.get("decision") or "reject", answer.get("reason") or answer.get("error") or "")

    def __repr__(self):
        return f"<lcp confirm handler for {self.library}>"


def _plain(value):
    """A JSON-able stand-in for what a library passes to the confirm handler."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return repr(value)


# --------------------------------------------------------------------------- #
# Host objects (SPEC §9)                                                       #
# --------------------------------------------------------------------------- #


class HostUnavailable(RuntimeError):
    """Raised in a tool when the host cannot do what it asked: nobody can be asked,
    there is no model. The message says why."""


def _ask(kind, library, **fields):
    """Sends one request or notice to the host, for the call this thread serves.

    ``kind``: ``confirm`` (``args``, ``kwargs``), ``interact``, ``generate``,
    ``progress`` or ``log`` (``body``). Returns the host's answer as a dict.
    """
    current = _current()
    request = {
        "kind": kind,
        "call_id": current.id if current is not None else None,
        "library": library if library is not None else (current.library if current is not None else None),
        "tool": current.function if current is not None else None,
    }
    request.update(fields)
    if _host is None:
        return {"error": "no host is installed"}
    try:
        text = _dumps(request)
    except (TypeError, ValueError) as exc:
        return {"error": f"the request cannot be sent to the host: {exc}"}
    return json.loads(_host(text))


class _UserInteraction:
    """``user_interaction_handler(request)``: asks the user through the host.

    ``request`` is the reference's dict: ``type`` (``"text"``, ``"secret"``,
    ``"select"``, or lcp's ``"form"`` with ``"schema"``), ``title``, ``prompt``,
    ``options``, ``default``. Returns the answer (a string; a dict for a form), or
    ``None`` when the user declines; raises ``HostUnavailable`` when nobody can be asked.
    """

    def __init__(self, library):
        self.library = library

    def __call__(self, request=None, **fields):
        if request is None:
            request = {}
        elif not isinstance(request, dict):
            request = {"type": "text", "prompt": str(request)}
        request = {**request, **fields}
        body = {key: _plain(request.get(key)) for key in ("type", "title", "prompt", "options", "default", "schema")}
        answer = _ask("interact", self.library, body=body)
        status = answer.get("status")
        if status == "given":
            value = answer.get("value")
            if str(body.get("type") or "text").lower() == "form":
                return value if isinstance(value, dict) else None
            return value if value is None or isinstance(value, str) else _dumps(value)
        if status == "declined":
            return None
        raise HostUnavailable(answer.get("reason") or answer.get("error") or "the host cannot ask the user")

    def __repr__(self):
        return f"<lcp user interaction handler for {self.library}>"


class _Client:
    """``lollms_client_instance`` and ``tool_context.client``: the host's model."""

    def __init__(self, library):
        self.library = library

    def generate_text(
        self, prompt, images=None, n_predict=None, temperature=None, system_prompt=None, **kwargs
    ):
        """Asks the host's model; returns its text. Raises ``HostUnavailable`` when the
        host has no model (or the client cannot sample)."""
        body = {
            "prompt": str(prompt),
            "images": [_image_text(image) for image in (images or [])],
            "n_predict": n_predict,
            "temperature": temperature,
            "system_prompt": system_prompt,
            "extra": {str(k): _plain(v) for k, v in kwargs.items()},
        }
        answer = _ask("generate", self.library, body=body)
        if isinstance(answer.get("text"), str):
            return answer["text"]
        raise HostUnavailable(answer.get("error") or "the host's model gave no text")

    def has_vision_capability(self):
        """Whether images may be sent to ``generate_text``."""
        current = _current()
        return bool(current is not None and current.host.get("vision"))

    def __repr__(self):
        return f"<lcp client for {self.library}>"


def _image_text(image):
    if isinstance(image, (bytes, bytearray, memoryview)):
        import base64

        return base64.b64encode(bytes(image)).decode("ascii")
    return str(image)


class _Root(type(Path())):
    """``tool_context.workspace_root``: a path, also callable as ``workspace_root()``."""

    def __call__(self):
        return Path(self)


class _ToolContext:
    """``tool_context``: the reference's ``ToolContext`` surface."""

    def __init__(self, library, workspace):
        self.library = library
        self.client = _Client(library)
        self.workspace_path = Path(workspace) if workspace else Path(os.getcwd())
        self.discussion = None
        self.personality = None

    def emit_progress(self, text, meta=None):
        """Reports progress (``meta`` may carry numeric ``progress`` and ``total``);
        returns whether the host took it."""
        meta = {str(k): _plain(v) for k, v in meta.items()} if isinstance(meta, dict) else {}
        answer = _ask("progress", self.library, body={"text": str(text), "meta": meta})
        return bool(answer.get("delivered"))

    @property
    def workspace_root(self):
        return _Root(self.workspace_path).resolve()

    def get(self, key, default=None):
        """``"working_dir"`` (and ``"workspace_path"``): the workspace folder."""
        if key in ("working_dir", "workspace_path", "workspace"):
            return str(self.workspace_path)
        return default

    def __repr__(self):
        return f"<lcp tool context for {self.library} in {self.workspace_path}>"


class _HostObjects:
    """The host objects of one call, made when the tool asks for them."""

    def __init__(self, library, workspace):
        self.library = library
        self.workspace = workspace
        self.made = {}

    def get(self, name):
        if name not in self.made:
            if name == "user_interaction_handler":
                self.made[name] = _UserInteraction(self.library)
            elif name == "lollms_client_instance":
                self.made[name] = _Client(self.library)
            else:
                self.made[name] = _ToolContext(self.library, self.workspace)
        return self.made[name]


class _LogRelay(logging.Handler):
    """Python's root logger's handler: a record made during a call goes to the host
    (an MCP client's ``notifications/message``), else to the call's ``stderr``."""

    def emit(self, record):
        current = _current()
        if current is None:
            return
        try:
            message = record.getMessage()
            if record.exc_info:
                message = message + "\n" + "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        except Exception:
            return
        answer = _ask("log", current.library, body={"level": record.levelno, "logger": record.name, "message": message})
        if not answer.get("delivered"):
            current.write("err", f"{record.levelname}:{record.name}:{message}\n")


_LOG_RELAY = _LogRelay()


def _set_log_level(level):
    """Records below ``level`` are neither made nor sent."""
    if logging.root.level != level:
        logging.root.setLevel(level)
    if _LOG_RELAY.level != level:
        _LOG_RELAY.setLevel(level)


# --------------------------------------------------------------------------- #
# Results                                                                      #
# --------------------------------------------------------------------------- #


def _jsonable(value, where, problems):
    """``value`` as plain JSON data (tuples become arrays); what JSON cannot carry is
    added to ``problems`` with the place it sits."""
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            problems.append(f"`{where}` is {value!r}, which JSON cannot represent")
            return None
        return float(value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(item, f"{where}[{i}]", problems) for i, item in enumerate(value)]
    if isinstance(value, dict):
        result = {}
        for key, item in value.items():
            if isinstance(key, str):
                key = str.__str__(key)
            elif isinstance(key, int) and not isinstance(key, bool):
                key = str(int(key))
            else:
                problems.append(f"`{where}` has a key {key!r} of type {type(key).__name__} (keys must be strings)")
                continue
            result[key] = _jsonable(item, f"{where}[{json.dumps(key, ensure_ascii=False)}]", problems)
        return result
    if isinstance(value, (set, frozenset)):
        problems.append(f"`{where}` is a {type(value).__name__} (JSON has no sets: return a list)")
    elif isinstance(value, (bytes, bytearray, memoryview)):
        problems.append(f"`{where}` is {type(value).__name__} (decode it to text or encode it as base64)")
    else:
        module = re.sub(r"_lcp_\d+_", "", type(value).__module__)
        problems.append(f"`{where}` is a {module}.{type(value).__qualname__} object")
    return None


# --------------------------------------------------------------------------- #
# Output capture and the working directory                                     #
# --------------------------------------------------------------------------- #


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


