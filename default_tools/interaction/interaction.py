"""interaction: ask the user, ask the host's model, report progress.

The library of the objects a host gives a tool besides its arguments. Each is
injected only into a function that names it, and is never part of the schema the
model sees:

* ``user_interaction_handler(request)``: asks the user. ``request`` is a dict with
  ``type`` (``"text"``, ``"secret"``, ``"select"`` or ``"form"`` with a flat JSON
  ``schema``), ``title``, ``prompt``, ``options`` and ``default``; the answer is a
  string (a dict for a form), or ``None`` when the user declines. It raises
  ``RuntimeError`` when nobody can be asked (no terminal, a client that cannot
  elicit). ``tool_ask_user`` and ``tool_ask_user_form`` take it as a parameter.
* ``set_user_interaction_handler(handler)`` and ``config["user_interaction_handler"]``:
  the same handler for the library as a whole, for code that is not a tool function
  (here ``_ask_secret``, used by ``tool_store_secret``).
* ``lollms_client_instance``: the host's model. ``generate_text(prompt, images=None,
  n_predict=None, temperature=None, system_prompt=None)`` returns its text and
  raises ``RuntimeError`` when the host has none; ``has_vision_capability()`` says
  whether images may be sent (``tool_describe_image``).
* ``tool_context``: ``emit_progress(text, {"progress": i, "total": n})``,
  ``workspace_root()``, ``workspace_path``, ``get("working_dir")`` and ``client``
  (the same model) (``tool_summarize_file``).
* Records logged through ``logging`` reach the host: MCP log messages under
  ``lcp serve``, the result's ``stderr`` under ``lcp call``.
* A result dict with ``images`` gives the model the images as content
  (``tool_describe_image`` when the host's model cannot see them).
"""

import base64
import logging
import os
import re

import lcp_files
from typing import Any, Literal, NotRequired, Optional, TypedDict

TOOL_LIBRARY_NAME = "Interaction"
TOOL_LIBRARY_DESC = (
    "Ask the user a question, a choice or a short form; let the user store a secret without "
    "showing it to the assistant; summarize long workspace files and describe images with the "
    "host's model, reporting progress."
)
TOOL_LIBRARY_ICON = "💬"
# Declared effects (SPEC §12): asking changes nothing; storing a secret rewrites one
# line of a file in the workspace.
TOOL_POLICY = {"read_only": True, "idempotent": False, "open_world": False, "grade": {"w": 1, "d": 0}}
TOOL_POLICIES = {
    "tool_store_secret": {"read_only": False, "destructive": True, "grade": {"w": 1, "d": 2}},
}

_log = logging.getLogger("lcp.interaction")
_NO_HANDLER = {"success": False, "error": "This host gives tools no user interaction handler."}
_NO_CONTEXT = {"success": False, "error": "This host gives tools no tool context (and no model)."}
_NO_MODEL = {"success": False, "error": "This host gives tools no model (lollms_client_instance)."}

_HANDLER = None  # the library's user interaction handler (hook or config)

_MAX_CHOICES = 50
_MAX_FIELDS = 20
_MAX_FILE_BYTES = 4 * 1024 * 1024
_PART_CHARS = 12_000
_MAX_PARTS = 40
_MAX_IMAGE_BYTES = 20 * 1024 * 1024
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_IMAGE_TYPES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def set_user_interaction_handler(handler) -> None:
    """Called by the host with the handler that asks the user."""
    global _HANDLER
    _HANDLER = handler


def init_tools_library(config: Optional[dict] = None) -> None:
    """Called once by the host; ``config["user_interaction_handler"]`` is the same
    handler, for hosts that pass it that way only."""
    global _HANDLER
    if _HANDLER is None and config:
        _HANDLER = config.get("user_interaction_handler")


def tool_ask_user(
    question: str,
    choices: Optional[list[str]] = None,
    default: Optional[str] = None,
    title: str = "The assistant asks",
    user_interaction_handler=None,
) -> dict[str, Any]:
    """Asks the user a question and waits for the answer: free text, or one of a few
    choices. Use it when the request is ambiguous or a decision belongs to the user,
    instead of guessing.

    Args:
        question: The question, in full sentences, as the user should read it.
        choices: The answers to choose from (2 to 50, distinct); omit for free text.
        default: The answer proposed to the user (one of the choices, if any).
        title: A short title for the question.

    Returns:
        dict: ``{"success": True, "output": {"answered": True, "answer": "..."}}``, or
        ``"answered": False`` when the user declined to answer.

    Examples:
        {"question": "Which database should the report use?", "choices": ["staging", "production"], "default": "staging"}
        {"question": "What should the new project be called?"}
    """
    if user_interaction_handler is None:
        return dict(_NO_HANDLER)
    question = question.strip()
    if not question:
        return {"success": False, "error": "The question is empty."}
    request = {"type": "text", "title": title.strip() or "The assistant asks", "prompt": question}
    if choices is not None:
        options = [str(choice).strip() for choice in choices]
        if not 2 <= len(options) <= _MAX_CHOICES or len(set(options)) != len(options) or not all(options):
            return {"success": False, "error": f"Give 2 to {_MAX_CHOICES} distinct, non-empty choices."}
        if default is not None and default not in options:
            return {"success": False, "error": f"The default {default!r} is not one of the choices."}
        request.update(type="select", options=options)
    if default is not None:
        request["default"] = default
    try:
        answer = user_interaction_handler(request)
    except RuntimeError as exc:
        return {"success": False, "error": f"The user cannot be asked: {exc}"}
    if answer is None:
        return {"success": True, "output": {"answered": False, "answer": None, "note": "The user declined to answer."}}
    return {"success": True, "output": {"answered": True, "answer": answer}}


class FormField(TypedDict):
    """One field of a form."""

    name: str
    """The key of the answer: a letter or underscore, then letters, digits, underscores."""
    description: NotRequired[str]
    """What the user should enter."""
    type: NotRequired[Literal["string", "number", "integer", "boolean"]]
    """The kind of value (default: string)."""
    choices: NotRequired[list[str]]
    """The values to choose from, for a string field."""
    required: NotRequired[bool]
    """Whether the user must fill it (default: true)."""


def tool_ask_user_form(
    title: str, fields: list[FormField], message: str = "", user_interaction_handler=None
) -> dict[str, Any]:
    """Asks the user to fill a short form in one go (several values at once, each with
    its own type), instead of one question after another.

    Args:
        title: What the form is for, e.g. "New customer".
        fields: The fields, in order (1 to 20).
        message: An explanation shown above the fields.

    Returns:
        dict: ``{"success": True, "output": {"answered": True, "answers": {name: value}}}``,
        or ``"answered": False`` when the user declined.

    Examples:
        {"title": "New customer", "fields": [{"name": "company", "description": "Company name"}, {"name": "seats", "type": "integer"}, {"name": "plan", "choices": ["free", "pro"], "required": false}]}
    """
    if user_interaction_handler is None:
        return dict(_NO_HANDLER)
    if not 1 <= len(fields) <= _MAX_FIELDS:
        return {"success": False, "error": f"Give 1 to {_MAX_FIELDS} fields."}
    properties: dict[str, dict] = {}
    required = []
    for field in fields:
        name = field.get("name", "")
        if not _FIELD_NAME.match(name):
            return {"success": False, "error": f"The field name {name!r} is not a letter or underscore followed by letters, digits or underscores."}
        if name in properties:
            return {"success": False, "error": f"The field {name!r} is given twice."}
        kind = field.get("type", "string")
        schema: dict[str, Any] = {"type": kind, "title": name.replace("_", " ").capitalize()}
        if field.get("description"):
            schema["description"] = field["description"]
        if field.get("choices"):
            if kind != "string":
                return {"success": False, "error": f"The field {name!r} has choices, so its type must be string."}
            schema["enum"] = [str(choice) for choice in field["choices"]]
        properties[name] = schema
        if field.get("required", True):
            required.append(name)
    request = {
        "type": "form",
        "title": title.strip() or "Form",
        "prompt": message.strip() or title.strip(),
        "schema": {"type": "object", "properties": properties, "required": required},
    }
    try:
        answers = user_interaction_handler(request)
    except RuntimeError as exc:
        return {"success": False, "error": f"The user cannot be asked: {exc}"}
    if answers is None:
        return {"success": True, "output": {"answered": False, "answers": None, "note": "The user declined the form."}}
    return {"success": True, "output": {"answered": True, "answers": answers}}


def _ask_secret(name: str, purpose: str, env_file: str):
    """The user's secret, ``None`` when declined; raises ``RuntimeError`` when nobody
    can be asked."""
    if _HANDLER is None:
        raise RuntimeError("this host gave the library no user interaction handler")
    return _HANDLER({
        "type": "secret",
        "title": f"Secret for {name}",
        "prompt": f"Needed for: {purpose}. It is saved to {env_file} as {name}; the assistant never sees it.",
    })


def _env_line(name: str, value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'{name}="{escaped}"\n'


def tool_store_secret(name: str, purpose: str, env_file: str = ".env") -> dict[str, Any]:
    """Asks the user for a secret (an API key, a password) without showing it to the
    assistant, and saves it in an env file of the workspace as NAME="value". Use it
    when a program in the workspace needs a credential: the value never appears in
    the conversation.

    Args:
        name: The variable name, e.g. WEATHER_API_KEY.
        purpose: What the secret is for, shown to the user.
        env_file: The env file, relative to the workspace, named .env, .env.NAME
            or NAME.env (the file tools never read those). A line for `name` that
            is already there is replaced.

    Returns:
        dict: ``{"success": True, "output": {"name", "env_file", "replaced", "characters"}}``;
        the value itself is never returned.

    Examples:
        {"name": "WEATHER_API_KEY", "purpose": "the weather service used by forecast.py"}
    """
    if not _ENV_NAME.match(name):
        return {"success": False, "error": f"{name!r} is not a variable name (letters, digits, underscores)."}
    file_name = env_file.strip().rstrip("/").rsplit("/", 1)[-1]
    if not lcp_files.is_private(file_name):
        return {
            "success": False,
            "error": f"The env file {env_file!r} must be named .env, .env.NAME or NAME.env: the file tools refuse to read those, so the secret never reaches the conversation.",
        }
    try:
        lcp_files.resolve(env_file, create_folders=False).close()
    except lcp_files.MissingFolder:
        pass
    except lcp_files.PathError as exc:
        return {"success": False, "error": f"The env file {env_file!r} is not a file inside the workspace: {exc}"}
    try:
        secret = _ask_secret(name, purpose.strip() or name, env_file)
    except RuntimeError as exc:
        return {"success": False, "error": f"The user cannot be asked: {exc}. Nothing was written."}
    if not secret:
        return {"success": False, "error": "The user declined to give the secret. Nothing was written."}
    try:
        handle, _ = lcp_files.open_file(env_file, private_ok=True)
        with handle:
            lines = handle.read().decode("utf-8").splitlines(keepends=True)
    except lcp_files.PathError as exc:
        if "does not exist" not in str(exc):
            return {"success": False, "error": f"Cannot read {env_file}: {exc}"}
        lines = []
    except (OSError, UnicodeDecodeError) as exc:
        return {"success": False, "error": f"Cannot read {env_file}: {exc}"}
    pattern = re.compile(rf"^\s*(export\s+)?{re.escape(name)}\s*=")
    replaced = any(pattern.match(line) for line in lines)
    kept = [line for line in lines if not pattern.match(line)]
    if kept and not kept[-1].endswith("\n"):
        kept[-1] += "\n"
    kept.append(_env_line(name, secret))
    try:
        lcp_files.write_atomically(env_file, "".join(kept).encode("utf-8"), mode=0o600, private_ok=True)
    except lcp_files.PathError as exc:
        return {"success": False, "error": f"Cannot write {env_file}: {exc}"}
    except OSError as exc:
        return {"success": False, "error": f"Cannot write {env_file}: {exc.strerror or exc}"}
    _log.info("stored %s in %s", name, env_file)
    output = {"name": name, "env_file": env_file, "replaced": replaced, "characters": len(secret)}
    return {"success": True, "output": output}


def _parts(text: str) -> list[str]:
    """``text`` in parts of at most ``_PART_CHARS``, cut at paragraph or line ends."""
    parts = []
    while len(text) > _PART_CHARS:
        window = text[:_PART_CHARS]
        cut = max(window.rfind("\n\n"), window.rfind("\n"))
        cut = cut + 1 if cut > _PART_CHARS // 2 else _PART_CHARS
        parts.append(text[:cut])
        text = text[cut:]
    if text.strip():
        parts.append(text)
    return parts


_SUMMARY_SYSTEM = "You summarize documents faithfully and concisely. Never add facts that are not in the text."


def tool_summarize_file(path: str, focus: Optional[str] = None, max_words: int = 200, tool_context=None) -> dict[str, Any]:
    """Summarizes a long text file of the workspace with the host's model, part by
    part, reporting progress; use it for files too long to read whole.

    Args:
        path: The file, relative to the workspace.
        focus: What the summary should concentrate on, e.g. "the open questions".
        max_words: About how long the summary may be (20 to 2000 words).

    Returns:
        dict: ``{"success": True, "output": {"path", "characters", "parts", "summary"}}``.

    Examples:
        {"path": "notes.md", "focus": "decisions", "$files": {"notes.md": "# Meeting\\n\\nWe chose SQLite for the prototype.\\n"}}
    """
    if tool_context is None:
        return dict(_NO_CONTEXT)
    try:
        text = _workspace_bytes(path, _MAX_FILE_BYTES).decode("utf-8", errors="replace")
    except ValueError as exc:
        return {"success": False, "error": f"{exc}."}
    name = path.rstrip("/").rsplit("/", 1)[-1]
    parts = _parts(text)
    if not parts:
        return {"success": False, "error": f"{path} is empty."}
    if len(parts) > _MAX_PARTS:
        return {"success": False, "error": f"{path} would take {len(parts)} parts; at most {_MAX_PARTS} are summarized."}
    words = max(20, min(2000, max_words))
    aim = f" Concentrate on {focus.strip()}." if focus and focus.strip() else ""
    steps = len(parts) + (1 if len(parts) > 1 else 0)
    _log.info("summarizing %s: %d characters in %d parts", path, len(text), len(parts))
    model = tool_context.client
    try:
        summaries = []
        for number, part in enumerate(parts, start=1):
            where = f" (part {number} of {len(parts)})" if len(parts) > 1 else ""
            prompt = f"Summarize this text from {name}{where} in at most {words} words.{aim}\n\n{part}"
            summaries.append(model.generate_text(prompt, system_prompt=_SUMMARY_SYSTEM, n_predict=words * 2, temperature=0.2).strip())
            tool_context.emit_progress(f"summarized part {number} of {len(parts)}", {"progress": number, "total": steps})
        summary = summaries[0]
        if len(summaries) > 1:
            joined = "\n\n".join(f"Part {n}: {s}" for n, s in enumerate(summaries, start=1))
            prompt = f"Combine these summaries of the parts of {name} into one summary of at most {words} words.{aim}\n\n{joined}"
            summary = model.generate_text(prompt, system_prompt=_SUMMARY_SYSTEM, n_predict=words * 2, temperature=0.2).strip()
            tool_context.emit_progress("combined the parts", {"progress": steps, "total": steps})
    except RuntimeError as exc:
        return {"success": False, "error": f"The host's model is not available: {exc}"}
    output = {"path": path, "characters": len(text), "parts": len(parts), "summary": summary}
    return {"success": True, "output": output}


def _workspace_bytes(path: str, limit: int) -> bytes:
    """The bytes of a file of the workspace (opened beneath it, never a private file);
    raises ``ValueError`` saying what is wrong."""
    handle, shown = lcp_files.open_file(path)
    with handle:
        if os.fstat(handle.fileno()).st_size > limit:
            raise ValueError(f"{shown} is larger than {limit // (1024 * 1024)} MiB")
        return handle.read(limit + 1)


def _image(image: str) -> tuple[bytes, str]:
    """The bytes and MIME type of a ``data:`` URI or a workspace file; raises
    ``ValueError`` saying what is wrong."""
    if image.startswith("data:"):
        header, _, data = image.partition(",")
        if not header.endswith(";base64"):
            raise ValueError("a data: URI must be base64 (data:image/png;base64,...)")
        try:
            content = base64.b64decode(data, validate=True)
        except ValueError:
            raise ValueError("the data: URI is not valid base64") from None
    else:
        content = _workspace_bytes(image, _MAX_IMAGE_BYTES)
    if content[8:12] == b"WEBP" and content.startswith(b"RIFF"):
        return content, "image/webp"
    for magic, mime in _IMAGE_TYPES:
        if content.startswith(magic):
            return content, mime
    raise ValueError("the image is not a PNG, JPEG, GIF or WebP")


def tool_describe_image(image: str, question: str = "Describe this image in detail.", lollms_client_instance=None) -> dict[str, Any]:
    """Looks at an image (a workspace file or a data: URI) and answers a question
    about it with the host's vision model. When the host's model cannot see images,
    the image is returned as image content instead, for the assistant to look at.

    Args:
        image: The image: a PNG, JPEG, GIF or WebP file relative to the workspace, or
            a data:image/...;base64 URI.
        question: What to find out about the image.

    Returns:
        dict: ``{"success": True, "output": {"image", "mime_type", "answer"}}``, or,
        without a vision model, ``"answer": None`` and the image in ``images``.

    Examples:
        {"image": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "question": "What colour is it?"}
    """
    if lollms_client_instance is None:
        return dict(_NO_MODEL)
    try:
        content, mime = _image(image.strip())
    except ValueError as exc:
        return {"success": False, "error": f"Cannot read the image: {exc}."}
    encoded = base64.b64encode(content).decode("ascii")
    label = image if not image.startswith("data:") else f"a data: URI ({mime})"
    if not lollms_client_instance.has_vision_capability():
        output = {"image": label, "mime_type": mime, "answer": None, "note": "The host's model cannot see images; the image is attached for you to look at."}
        return {"success": True, "output": output, "images": [f"data:{mime};base64,{encoded}"]}
    try:
        answer = lollms_client_instance.generate_text(question, images=[encoded], n_predict=1024, temperature=0.2)
    except RuntimeError as exc:
        return {"success": False, "error": f"The host's model is not available: {exc}"}
    return {"success": True, "output": {"image": label, "mime_type": mime, "answer": answer.strip()}}
