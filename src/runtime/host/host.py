"""lcp's Python side of running tools (SPEC §5).

Loaded once into the embedded interpreter as the module ``_lcp_host``, last of lcp's
modules in this folder, which it builds on: ``_lcp_calls`` (the calls in progress and
what they print), ``_lcp_results`` (a result as plain data), ``_lcp_host_objects``
(SPEC §9) and ``_lcp_arguments`` (a tool's parameters, JSON arguments converted to the
annotated types). It owns: importing a tool file under a
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
import itertools
import json
import logging
import os
import re
import signal
import sys
import threading
import types
import typing
import urllib.parse

import _lcp_calls
import _lcp_host_objects
from _lcp_arguments import (  # loaded before this module
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
from _lcp_calls import Timeout, _Call, _calls, _direct, _enter, _leave
from _lcp_host_objects import _Bridge, _HostObjects, _UserInteraction, _set_log_level
from _lcp_results import (
    _SANDBOX,
    _broken_declaration,
    _dumps,
    _ended,
    _message,
    _outcome,
    _raised,
    _resource_contents,
    _timed_out,
    _traceback,
)


_lock = threading.Lock()
_names = itertools.count(1)
_libraries = {}  # file path -> _Library (loaded, or rejected with its error)
_load_locks = {}  # file path -> lock held while that file is imported
_packages = {}  # library folder -> private package name


# --------------------------------------------------------------------------- #
# Entry points                                                                #
# --------------------------------------------------------------------------- #


def install(host, before_chdir=None, printed=None):
    """Called once: ``host(request_json) -> answer_json`` asks the host (see ``_lcp_host_objects._send``);
    ``before_chdir()``, if given, is called before a tool changes the working directory
    (``os.chdir``, ``os.fchdir``), so the host can restore it; ``printed(call_id,
    stream, text)``, if given, hears what a call prints as it prints it (a worker
    process sends it on, so that it survives the process)."""
    sys.dont_write_bytecode = True  # never litter tool folders with __pycache__
    _lcp_calls.install(printed)
    _lcp_host_objects.install(host)
    if before_chdir is not None:
        os.chdir = _watched(os.chdir, before_chdir)
        os.fchdir = _watched(os.fchdir, before_chdir)


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


def confine(read_only, offline, confined):
    """What this process's kernel enforces (SPEC §18): set once, before any call."""
    _SANDBOX.update(read_only=bool(read_only), offline=bool(offline), confined=bool(confined))


_site_dirs = []  # the venvs' site-packages added, for ``_where``


def _where(exc):
    """What an import error says besides Python's message: the interpreter that looked
    and how to point lcp at the environment that has the module."""
    if not isinstance(exc, ImportError):
        return ""
    sites = ", ".join(_site_dirs) or "none"
    return (
        f" (looked in the Python {sys.executable} (sys.prefix {sys.prefix}) and in the venv site-packages {sites};"
        " point lcp at the environment that has it: --venv DIR, `[python] venv = \"DIR\"` in the config,"
        " $VIRTUAL_ENV, a .venv beside the tools folder or the config, or Toolbox(venv=DIR) in Python)"
    )


def add_site_dir(path):
    """Makes a virtual environment's site-packages importable, ahead of the
    interpreter's own (as inside the environment)."""
    import site

    if path in sys.path:
        return
    _site_dirs.append(path)
    before = list(sys.path)
    site.addsitedir(path)
    added = [entry for entry in sys.path if entry not in before]
    sys.path[:] = added + before


def call(request_text):
    """Runs a tool (``kind: "tool"``) or a prompt provider (``kind: "provider"``).

    Returns ``{"outcome", "output", "error"?, "traceback"?, "stdout", "stderr"}``, where
    ``outcome`` is how the call ended, said here where it is known: ``returned``,
    ``reported``, ``raised``, ``refused``, ``invalid``, ``timed_out`` or ``out_of_memory``.
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
        result = _ended("raised", f"lcp could not run `{request.get('function')}`: {_message(exc)}", exc)
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
# One call                                                                    #
# --------------------------------------------------------------------------- #


def _run(request, current):
    library, timed_out = _library(request, current)
    if timed_out:
        return _timed_out(request)
    if library.error is not None:
        return {"outcome": "raised", "output": None, "error": library.error, "traceback": library.traceback}
    function = getattr(library.module, request["function"], None)
    if not callable(function):
        if request.get("module"):
            return _ended("refused", f"the module `{request['module']['name']}` has no function `{request['function']}`")
        return _ended("refused", f"`{request['function']}` is not a function of {request['file']} once the module has run")
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
        return _ended("refused", str(exc))
    try:
        value = _invoke(current, function, positional, keywords)
        _settle()
        if request.get("kind") == "resource":
            value = _resource_contents(value)
    except Timeout:
        raise
    except BaseException as exc:
        broken = _broken_declaration(exc, request.get("function"))
        return _raised(exc) if broken is None else _ended("raised", broken, exc)
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


def _provide(function, current):
    try:
        value = _invoke(current, function, (), {})
        _settle()
    except Timeout:
        raise
    except BaseException as exc:
        return _raised(exc)
    if not isinstance(value, str):
        return _ended("invalid", f"returned {type(value).__name__}, not a string")
    return {"outcome": "returned", "output": str.__str__(value)}


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


# --------------------------------------------------------------------------- #
# Direct calls                                                                #
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


def _direct_failure(exc, tb, function):
    """The reply (JSON text) for a direct call of ``function`` that raised ``exc``
    (``tb``: its traceback)."""
    if tb is not None:
        exc = exc.with_traceback(tb)
    broken = _broken_declaration(exc, function)
    return _dumps(_raised(exc) if broken is None else _ended("raised", broken, exc))


# --------------------------------------------------------------------------- #
# Loading and hooks                                                           #
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
        error = f"the module `{name}` could not be imported: {_message(exc)}{_where(exc)}"
        return _Library(error=error, traceback=_traceback(exc)), False
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
        return _Library(
            error=f"the library {path} could not be imported: {_message(exc)}{_where(exc)}", traceback=_traceback(exc)
        )
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
    # A library's own `autonomy_level` (its host config's) wins over the runtime's.
    config["autonomy_level"] = config.get("autonomy_level") or request.get("autonomy_level") or "safe"
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
