"""The host objects a tool is given (SPEC §9), and its log records.

Loaded once as ``_lcp_host_objects``. It owns the confirm handler's bridge,
``user_interaction_handler``, ``lollms_client_instance``, ``tool_context`` and the
relay of ``logging`` records. Every one of them reaches the host through the one
function given to ``install``, ``host(request_json) -> answer_json``, with the id of
the call it belongs to; the host answers with that call's callbacks (a terminal, an
MCP client, a Rust closure). Never: waits on anything but that function.
"""

import json
import logging
import math
import os
import traceback
from pathlib import Path

from _lcp_calls import _current
from _lcp_results import _dumps


_host = None  # host(request_json) -> answer_json, see ``_ask``


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


class HostUnavailable(RuntimeError):
    """Raised in a tool when the host cannot do what it asked: nobody can be asked,
    there is no model. The message says why."""


def _ask(kind, library, **fields):
    """Sends one request or notice to the host, for the call this thread serves.

    ``kind``: ``confirm`` (``args``, ``kwargs``), ``interact``, ``generate``,
    ``progress``, ``task`` or ``log`` (``body``). Returns the host's answer as a dict.
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


def _interaction(request):
    """The body of a ``user_interaction_handler`` request."""
    fields = ("type", "title", "prompt", "options", "default", "schema", "key")
    return {key: _plain(request.get(key)) for key in fields}


def _interaction_answer(body, answer):
    """What the tool gets for the host's answer to an interaction; raises
    ``HostUnavailable`` when nobody could be asked."""
    status = answer.get("status")
    if status == "given":
        value = answer.get("value")
        if str(body.get("type") or "text").lower() == "form":
            return value if isinstance(value, dict) else None
        return value if value is None or isinstance(value, str) else _dumps(value)
    if status == "declined":
        return None
    raise HostUnavailable(answer.get("reason") or answer.get("error") or "the host cannot ask the user")


def _generation(prompt, images=None, n_predict=None, temperature=None, system_prompt=None, key=None, **kwargs):
    """The body of a ``generate_text`` request."""
    return {
        "prompt": str(prompt),
        "images": [_image_text(image) for image in (images or [])],
        "n_predict": n_predict,
        "temperature": temperature,
        "system_prompt": system_prompt,
        "key": key,
        "extra": {str(k): _plain(v) for k, v in kwargs.items()},
    }


def _generated(answer):
    if isinstance(answer.get("text"), str):
        return answer["text"]
    raise HostUnavailable(answer.get("error") or "the host's model gave no text")


def _roots(answer):
    if isinstance(answer.get("roots"), list):
        return answer["roots"]
    raise HostUnavailable(answer.get("error") or "the host shares no roots")


class _UserInteraction:
    """``user_interaction_handler(request)``: asks the user through the host.

    ``request`` is the reference's dict: ``type`` (``"text"``, ``"secret"``,
    ``"select"``, or lcp's ``"form"`` with ``"schema"``), ``title``, ``prompt``,
    ``options``, ``default``, and ``key``: the question's name where the host asks
    several at once (MCP's ``inputRequests``). Returns the answer (a string; a dict for
    a form), or ``None`` when the user declines; raises ``HostUnavailable`` when nobody
    can be asked.
    """

    def __init__(self, library):
        self.library = library

    def __call__(self, request=None, **fields):
        if request is None:
            request = {}
        elif not isinstance(request, dict):
            request = {"type": "text", "prompt": str(request)}
        request = {**request, **fields}
        body = _interaction(request)
        return _interaction_answer(body, _ask("interact", self.library, body=body))

    def __repr__(self):
        return f"<lcp user interaction handler for {self.library}>"


class _Client:
    """``lollms_client_instance`` and ``tool_context.client``: the host's model."""

    def __init__(self, library):
        self.library = library

    def generate_text(
        self, prompt, images=None, n_predict=None, temperature=None, system_prompt=None, key=None, **kwargs
    ):
        """Asks the host's model; returns its text. ``key`` names the request where the
        host asks several at once. Raises ``HostUnavailable`` when the host has no model
        (or the client cannot sample)."""
        body = _generation(prompt, images, n_predict, temperature, system_prompt, key, **kwargs)
        return _generated(_ask("generate", self.library, body=body))

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

    def become_task(self, status=None):
        """Says the rest of the call is long work: a host that runs calls as tasks
        (MCP's tasks extension, for a tool declared ``task``) answers its caller now and
        lets it follow the rest; ``status`` is the task's first status message. Returns
        whether the call is now a task; elsewhere it does nothing and returns False."""
        answer = _ask("task", self.library, body={"text": "" if status is None else str(status)})
        return bool(answer.get("delivered"))

    def roots(self, key=None):
        """The roots of the host's file system it lets tools see: a list of ``{"uri",
        "name"?}`` (MCP's ``roots/list``). Raises ``HostUnavailable`` when it shares none."""
        return _roots(_ask("roots", self.library, body={"key": key}))

    def ask(self, questions):
        """Asks the host several things at once, each under its name; a host that can
        put them to its client together (MCP's ``inputRequests``) does. ``questions``
        maps a name to ``{"kind": "interact", ...}`` (what ``user_interaction_handler``
        takes), ``{"kind": "generate", "prompt", ...}`` (``generate_text``'s arguments)
        or ``{"kind": "roots"}``. Returns the same names, each with what that call would
        return, or the ``HostUnavailable`` it would raise (returned, not raised: the
        others may still have answers)."""
        requests, kinds = {}, {}
        for name, question in dict(questions).items():
            question = dict(question)
            kind = question.pop("kind", "interact")
            if kind == "interact":
                body = _interaction(question)
            elif kind == "generate":
                body = _generation(**question)
            elif kind == "roots":
                body = {}
            else:
                raise ValueError(f"question {name!r}: kind is interact, generate or roots, not {kind!r}")
            requests[str(name)] = {"kind": kind, "body": body}
            kinds[str(name)] = (kind, body)
        answer = _ask("batch", self.library, body={"requests": requests})
        answers = answer.get("answers") if isinstance(answer.get("answers"), dict) else {}
        results = {}
        for name, (kind, body) in kinds.items():
            one = answers.get(name) or {"error": answer.get("error") or "the host gave no answer"}
            try:
                if kind == "interact":
                    results[name] = _interaction_answer(body, one)
                elif kind == "generate":
                    results[name] = _generated(one)
                else:
                    results[name] = _roots(one)
            except HostUnavailable as exc:
                results[name] = exc
        return results

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


def install(host):
    """``host(request_json) -> answer_json`` answers what tools ask (see ``_ask``);
    log records are relayed from here on."""
    global _host
    _host = host
    logging.root.addHandler(_LOG_RELAY)
    _set_log_level(logging.INFO)
