"""The host objects a tool is given (SPEC §9), and its log records.

Loaded once as ``_lcp_host_objects``. It owns the confirm handler's bridge,
``user_interaction_handler``, ``lollms_client_instance``, ``tool_context`` and the
relay of ``logging`` records. Every one of them reaches the host through the one
function given to ``install``, ``host(request_json) -> answer_json``, with the id of
the call it belongs to; the host answers with that call's callbacks (a terminal, an
MCP client, a Rust closure).

What goes both ways is serde's JSON of lcp's own types (``host_objects.rs``): a
``FromTool`` ``{"call_id", "sent": {"Request": {"Interact": {...}}}}`` out, a
``ToTool`` (``{"Answer": {"Interact": {"Given": "..."}}}``, ``{"Delivered": true}`` or
``{"Unreadable": "why"}``) back. This module makes what a tool passes (any arguments,
in the reference's shapes) into those types' fields, and their answers into what the
tool gets. Never: waits on anything but that function.
"""

import json
import logging
import math
import os
import traceback
from pathlib import Path

from _lcp_calls import _current
from _lcp_results import _dumps


_host = None  # host(request_json) -> answer_json, see ``_send``


class _Bridge:
    """The confirm handler a library sees: any arguments in, ``(decision, reason)`` out."""

    def __init__(self, library):
        self.library = library

    def __call__(self, *args, **kwargs):
        args = [_plain(a) for a in args]
        kwargs = {str(k): _plain(v) for k, v in kwargs.items()}
        content, label = _content_and_label(args, kwargs)
        request = {"content": content, "label": label, "args": args, "kwargs": kwargs}
        confirmation, why = _answer(_request("Confirm", self.library, request), "Confirm")
        if isinstance(confirmation, dict):
            return (confirmation.get("decision") or "reject", confirmation.get("reason") or "")
        return ("reject", why)

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


def _send(sent):
    """Sends ``sent`` (a ``Sent``: ``{"Request": ...}`` or ``{"Notice": ...}``) to the
    host, for the call this thread serves; returns the host's ``ToTool`` as a dict."""
    current = _current()
    if _host is None:
        return {"Unreadable": "no host is installed"}
    try:
        text = _dumps({"call_id": current.id if current is not None else None, "sent": sent})
    except (TypeError, ValueError) as exc:
        return {"Unreadable": f"the request cannot be sent to the host: {exc}"}
    return json.loads(_host(text))


def _origin(library):
    """The ``library`` and ``tool`` fields of a request: the library asking (the call's
    when not given) and the tool being run, if any."""
    current = _current()
    if library is None:
        library = current.library if current is not None else ""
    return {"library": library, "tool": current.function if current is not None else None}


def _request(kind, library, fields):
    """Asks the host the ``HostRequest`` ``kind`` with ``fields``; returns its ``ToTool``."""
    return _send({"Request": {kind: {**_origin(library), **fields}}})


def _notify(kind, fields):
    """Tells the host the ``Notice`` ``kind``; returns whether it took it."""
    current = _current()
    tool = current.function if current is not None else None
    return _send({"Notice": {kind: {"tool": tool, **fields}}}).get("Delivered") is True


def _answer(reply, kind):
    """The ``HostAnswer`` of ``kind`` in ``reply`` (``None`` if there is none), and why
    there is none."""
    answer = reply.get("Answer")
    if isinstance(answer, dict) and kind in answer:
        return answer[kind], ""
    return None, reply.get("Unreadable") or f"the host gave no {kind.lower()} answer"


def _text(value):
    """A value as text, as a string field of a request holds it: a string as it is,
    nothing as empty, anything else as its JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(_plain(value), ensure_ascii=False, separators=(",", ":"))


def _key(value):
    """The name a tool gives a question: a non-empty string, trimmed."""
    return (value.strip() or None) if isinstance(value, str) else None


def _content_and_label(args, kwargs):
    """What a confirmation is about and its title: ``(content, label[, extra])``,
    keywords of those names, or one dict (``content`` / ``command`` / ``text`` /
    ``message``, and ``label`` / ``title`` / ``action``)."""

    def first(fields, keys):
        return next((_text(fields[key]) for key in keys if key in fields), None)

    if len(args) == 1 and isinstance(args[0], dict) and not kwargs:
        fields = args[0]
        content = first(fields, ("content", "command", "text", "message"))
        label = first(fields, ("label", "title", "action"))
        return (_text(fields) if content is None else content, label or "")
    content = _text(args[0]) if args else first(kwargs, ("content",))
    label = _text(args[1]) if len(args) > 1 else first(kwargs, ("label",))
    return (content or "", label or "")


_INTERACTION_KINDS = {"secret": "secret", "password": "secret", "select": "select", "choice": "select", "form": "form"}


def _interaction(request):
    """The fields of an ``Interaction`` from a ``user_interaction_handler`` request."""
    kind = request.get("type")
    options = request.get("options")
    default = _plain(request.get("default"))
    schema = _plain(request.get("schema"))
    return {
        "kind": _INTERACTION_KINDS.get(kind.lower(), "text") if isinstance(kind, str) else "text",
        "title": _text(request.get("title")),
        "prompt": _text(request.get("prompt")),
        "options": [_text(option) for option in options] if isinstance(options, (list, tuple)) else [],
        "default": default,
        "schema": schema if isinstance(schema, dict) else None,
        "key": _key(request.get("key")),
    }


def _interaction_answer(fields, answer, why):
    """What the tool gets for the host's ``Answer`` to an interaction; raises
    ``HostUnavailable`` when nobody could be asked."""
    if isinstance(answer, dict) and "Given" in answer:
        value = answer["Given"]
        if fields["kind"] == "form":
            return value if isinstance(value, dict) else None
        return value if value is None or isinstance(value, str) else _dumps(value)
    if answer == "Declined":
        return None
    if isinstance(answer, dict) and "Unavailable" in answer:
        why = answer["Unavailable"]
    raise HostUnavailable(why or "the host cannot ask the user")


def _number(value):
    """A JSON number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def _generation(prompt, images=None, n_predict=None, temperature=None, system_prompt=None, key=None, **kwargs):
    """The fields of a ``Generation`` from ``generate_text``'s arguments."""
    count = _number(n_predict)
    temperature = _number(temperature)
    return {
        "prompt": _text(prompt),
        "images": [_image_text(image) for image in (images or [])],
        "n_predict": count if isinstance(count, int) and count >= 0 else None,
        "temperature": None if temperature is None else float(temperature),
        "system_prompt": system_prompt if isinstance(system_prompt, str) else None,
        "extra": {str(k): _plain(v) for k, v in kwargs.items() if v is not None},
        "key": _key(key),
    }


def _result(answer, why, fallback):
    """The ``Ok`` of a ``Result`` answer; raises ``HostUnavailable`` with its ``Err``."""
    if isinstance(answer, dict) and "Ok" in answer:
        return answer["Ok"]
    if isinstance(answer, dict) and isinstance(answer.get("Err"), str):
        why = answer["Err"]
    raise HostUnavailable(why or fallback)


def _generated(answer, why):
    """The text of a ``Generate`` answer (its ``Ok`` is ``{"text", "model"?}``)."""
    return _result(answer, why, "the host's model gave no text")["text"]


def _roots(answer, why):
    return _result(answer, why, "the host shares no roots")


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
        fields = _interaction({**request, **fields})
        answer, why = _answer(_request("Interact", self.library, fields), "Interact")
        return _interaction_answer(fields, answer, why)

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
        fields = _generation(prompt, images, n_predict, temperature, system_prompt, key, **kwargs)
        return _generated(*_answer(_request("Generate", self.library, fields), "Generate"))

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
        progress, total = _number(meta.get("progress")), _number(meta.get("total"))
        return _notify(
            "Progress",
            {
                "text": str(text),
                "progress": None if progress is None else float(progress),
                "total": None if total is None else float(total),
                "meta": meta,
            },
        )

    def become_task(self, status=None):
        """Says the rest of the call is long work: a host that runs calls as tasks
        (MCP's tasks extension, for a tool declared ``task``) answers its caller now and
        lets it follow the rest; ``status`` is the task's first status message. Returns
        whether the call is now a task; elsewhere it does nothing and returns False."""
        return _notify("BecomeTask", {"text": "" if status is None else str(status), "meta": {}})

    def roots(self, key=None):
        """The roots of the host's file system it lets tools see: a list of ``{"uri",
        "name"?}`` (MCP's ``roots/list``). Raises ``HostUnavailable`` when it shares none."""
        return _roots(*_answer(_request("Roots", self.library, {"key": _key(key)}), "Roots"))

    def ask(self, questions):
        """Asks the host several things at once, each under its name; a host that can
        put them to its client together (MCP's ``inputRequests``) does. ``questions``
        maps a name to ``{"kind": "interact", ...}`` (what ``user_interaction_handler``
        takes), ``{"kind": "generate", "prompt", ...}`` (``generate_text``'s arguments)
        or ``{"kind": "roots"}``. Returns the same names, each with what that call would
        return, or the ``HostUnavailable`` it would raise (returned, not raised: the
        others may still have answers)."""
        origin = _origin(self.library)
        requests, kinds = [], {}
        for name, question in dict(questions).items():
            name, question = str(name), dict(question)
            kind = question.pop("kind", "interact")
            if kind == "interact":
                fields = _interaction(question)
            elif kind == "generate":
                fields = _generation(**question)
            elif kind == "roots":
                fields = {}
            else:
                raise ValueError(f"question {name!r}: kind is interact, generate or roots, not {kind!r}")
            fields["key"] = _key(name)
            kind = kind.capitalize()
            requests.append([name, {kind: {**origin, **fields}}])
            kinds[name] = (kind, fields)
        batch, why = _answer(_send({"Request": {"Batch": requests}}), "Batch")
        answers = {}
        for pair in batch if isinstance(batch, list) else []:
            if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], dict):
                answers[pair[0]] = pair[1]
        results = {}
        for name, (kind, fields) in kinds.items():
            one = answers.get(name, {})
            answer, one_why = (one[kind], "") if kind in one else (None, why or "the host gave no answer")
            try:
                if kind == "Interact":
                    results[name] = _interaction_answer(fields, answer, one_why)
                elif kind == "Generate":
                    results[name] = _generated(answer, one_why)
                else:
                    results[name] = _roots(answer, one_why)
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
        level = record.levelno if isinstance(record.levelno, int) and record.levelno >= 0 else logging.INFO
        fields = {"level": min(level, 2**32 - 1), "logger": _text(record.name), "message": message}
        if not _notify("Log", fields):
            current.write("err", f"{record.levelname}:{record.name}:{message}\n")


_LOG_RELAY = _LogRelay()


def _set_log_level(level):
    """Records below ``level`` are neither made nor sent."""
    if logging.root.level != level:
        logging.root.setLevel(level)
    if _LOG_RELAY.level != level:
        _LOG_RELAY.setLevel(level)


def install(host):
    """``host(request_json) -> answer_json`` answers what tools ask (see ``_send``);
    log records are relayed from here on."""
    global _host
    _host = host
    logging.root.addHandler(_LOG_RELAY)
    _set_log_level(logging.INFO)
