"""``Toolbox``: a host's tools, read by lcp's Rust parser and run in lcp's supervised,
sandboxed worker processes with this interpreter (SPEC §8, §18, §19).

Discovery and export never import a tool. A call's host callables (``confirm``,
``ask``, ``progress``, ``log``) run here, in the host's process, while the tool runs in
its worker; a tool that crashes or hangs is a result, never the host's end.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from lcp_tools import _lcp

PathLike = Union[str, "os.PathLike[str]"]

#: How a call ended (``ToolResult.outcome`` on the Rust side).
OUTCOMES = (
    "returned",
    "reported",
    "raised",
    "refused",
    "invalid",
    "timed_out",
    "cancelled",
    "out_of_memory",
    "died",
    "relayed",
)


@dataclass
class CallResult:
    """The result of a call: SPEC §5's fields and how the call ended."""

    #: ``returned``, ``reported``, ``raised``, ``refused``, ``invalid``,
    #: ``timed_out``, ``cancelled``, ``out_of_memory``, ``died`` or ``relayed``.
    outcome: str
    #: Whether the tool returned a value.
    ok: bool
    #: The return value, as JSON carries it.
    output: Any = None
    #: Why it failed: ``Type: message`` for an exception.
    error: Optional[str] = None
    #: The formatted traceback of the exception, when one was raised.
    traceback: Optional[str] = None
    #: What the tool printed.
    stdout: str = ""
    stderr: str = ""
    #: What the worker's sandbox refused during the call.
    refused: List[str] = field(default_factory=list)

    @classmethod
    def _from_json(cls, text: str) -> "CallResult":
        raw = json.loads(text)
        outcome = raw.get("outcome")
        if isinstance(outcome, dict):  # {"relayed": {"is_error": ...}}
            outcome = next(iter(outcome), "relayed")
        return cls(
            outcome=str(outcome),
            ok=bool(raw.get("ok")),
            output=raw.get("output"),
            error=raw.get("error"),
            traceback=raw.get("traceback"),
            stdout=raw.get("stdout") or "",
            stderr=raw.get("stderr") or "",
            refused=list(raw.get("refused") or []),
        )


def _split(paths: Union[None, PathLike, Sequence[PathLike]]) -> tuple[list[str], list[str]]:
    """Folders and files of ``paths``, each in the order given."""
    if paths is None:
        return [], []
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    folders: list[str] = []
    files: list[str] = []
    for path in paths:
        text = os.fspath(path)
        (files if os.path.isfile(text) else folders).append(text)
    return folders, files


def _decision(answer: Any) -> Dict[str, str]:
    """A confirm handler's answer as lcp takes it: ``True``/``False``,
    ``"allow"``/``"reject"``/``"always"``, or ``(decision, reason)``."""
    reason = ""
    if isinstance(answer, (tuple, list)) and answer:
        answer, reason = answer[0], (str(answer[1]) if len(answer) > 1 and answer[1] is not None else "")
    if isinstance(answer, bool):
        decision = "allow" if answer else "reject"
    elif isinstance(answer, str) and answer.strip().lower() in ("allow", "reject", "always"):
        decision = answer.strip().lower()
    elif isinstance(answer, str) and answer.strip().lower() in ("yes", "y", "ok", "true", "approve", "approved"):
        decision = "allow"
    else:
        decision = "reject"
    return {"decision": decision, "reason": reason}


def confirm_bridge(handler: Callable[..., Any], *, spread: bool) -> Callable[[str], str]:
    """The native side's confirm callback for ``handler``: with ``spread``, the
    handler gets the tool's own arguments (lollms' ``handler(content, label)``),
    else one dict with ``library``, ``tool``, ``content``, ``label``, ``args``, ``kwargs``."""

    def confirm(text: str) -> str:
        request = json.loads(text)
        if spread:
            answer = handler(*request.get("args", []), **request.get("kwargs", {}))
        else:
            answer = handler(request)
        return json.dumps(_decision(answer))

    return confirm


def ask_bridge(handler: Callable[[Dict[str, Any]], Any]) -> Callable[[str], str]:
    """The native side's interaction callback: ``handler`` gets the reference's
    request dict (``type``, ``title``, ``prompt``, ``options``, ``default``, ...) and
    returns the answer (``None``: declined)."""

    def ask(text: str) -> str:
        asked = json.loads(text)
        request = {
            "type": asked.get("kind", "text"),
            "title": asked.get("title", ""),
            "prompt": asked.get("prompt", ""),
        }
        # What the tool left out stays out.
        for key in ("options", "default", "schema", "key"):
            if asked.get(key) not in (None, []):
                request[key] = asked[key]
        answer = handler(request)
        return json.dumps({"declined": True} if answer is None else {"given": answer})

    return ask


def generate_bridge(handler: Callable[[Dict[str, Any]], Any]) -> Callable[[str], str]:
    """The native side's model callback: ``handler`` gets the request (``prompt``,
    ``images``, ``n_predict``, ``temperature``, ``system_prompt``, ``extra``) and
    returns the generated text; what it raises is the tool's error."""

    def generate(text: str) -> str:
        try:
            return json.dumps({"text": str(handler(json.loads(text)))})
        except Exception as exc:
            return json.dumps({"error": f"{type(exc).__name__}: {exc}"})

    return generate


def _notice(handler: Optional[Callable[[Dict[str, Any]], Any]]) -> Optional[Callable[[str], None]]:
    if handler is None:
        return None
    return lambda text: (handler(json.loads(text)), None)[1]


class Toolbox:
    """The tools of ``paths`` (folders and files; none: lcp's built-in tools), with a
    config file, a profile, a default workspace and a venv whose packages tools
    import besides this environment's.

    Tools run in worker processes of this interpreter (``sys.executable -m lcp_tools
    __worker``), each entering its sandbox before any tool code runs.
    """

    def __init__(
        self,
        paths: Union[None, PathLike, Sequence[PathLike]] = None,
        config: Optional[PathLike] = None,
        profile: Optional[str] = None,
        workspace: Optional[PathLike] = None,
        venv: Optional[PathLike] = None,
        *,
        in_process: bool = False,
    ) -> None:
        self._paths = [os.fspath(p) for p in ([paths] if isinstance(paths, (str, os.PathLike)) else (paths or []))]
        self._config = os.fspath(config) if config is not None else None
        self._profile = profile
        folders, files = _split(self._paths)
        self._native = _lcp.Toolbox(
            folders,
            files,
            self._config,
            profile,
            os.fspath(workspace) if workspace is not None else None,
            os.fspath(venv) if venv is not None else None,
            in_process,
        )

    def tools(self) -> List[Dict[str, Any]]:
        """Every tool shown: name, description, parameters (JSON Schema), library,
        path, line, declarations... (the manifest's entries)."""
        return self.export("manifest")["tools"]

    def export(self, format: str = "openai", strict: bool = False) -> Any:
        """The tools in ``format`` (``openai``, ``openai-responses``, ``anthropic``,
        ``gemini``, ``mcp``, ``manifest``): the same JSON as ``lcp export``."""
        return json.loads(self._native.export(format, strict))

    def check(self) -> Dict[str, Any]:
        """``lcp check --format json``: counts and diagnostics."""
        return json.loads(self._native.check())

    def call(
        self,
        name: str,
        arguments: Optional[Dict[str, Any]] = None,
        *,
        confirm: Optional[Callable[[Dict[str, Any]], Any]] = None,
        ask: Optional[Callable[[Dict[str, Any]], Any]] = None,
        progress: Optional[Callable[[Dict[str, Any]], Any]] = None,
        log: Optional[Callable[[Dict[str, Any]], Any]] = None,
        generate: Optional[Callable[[Dict[str, Any]], str]] = None,
        timeout: Optional[float] = None,
        workspace: Optional[PathLike] = None,
    ) -> CallResult:
        """Calls ``name`` in a worker and waits for its result.

        ``confirm(request)`` answers the tool's confirmations (``True``, ``"allow"``,
        ``"always"``, ``("reject", reason)``...); without it they are rejected.
        ``ask(request)`` answers questions to the user (``None``: declined).
        ``progress(report)`` and ``log(record)`` hear what the tool reports.
        ``generate(request)`` answers the tool's ``generate_text`` with the text.
        ``timeout`` (seconds) stops the tool, ending its worker if need be."""
        text = self._native.call(
            name,
            json.dumps(arguments or {}),
            os.fspath(workspace) if workspace is not None else None,
            timeout,
            confirm_bridge(confirm, spread=False) if confirm is not None else None,
            ask_bridge(ask) if ask is not None else None,
            _notice(progress),
            _notice(log),
            generate_bridge(generate) if generate is not None else None,
        )
        return CallResult._from_json(text)

    async def acall(self, name: str, arguments: Optional[Dict[str, Any]] = None, **options: Any) -> CallResult:
        """:meth:`call` without blocking the event loop (the call waits in a thread)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, functools.partial(self.call, name, arguments, **options))

    def serve(self, *, http: Optional[str] = None, workspace: Optional[PathLike] = None, timeout: float = 30.0) -> int:
        """``lcp serve`` with these tools: MCP over stdio, or Streamable HTTP at
        ``http`` (``host:port``). Returns when the server ends, with its exit code."""
        argv = ["lcp", "serve", *self._paths]
        if self._config is not None:
            argv += ["--config", self._config]
        if self._profile is not None:
            argv += ["--profile", self._profile]
        if http is not None:
            argv += ["--http", http]
        if workspace is not None:
            argv += ["--workspace", os.fspath(workspace)]
        argv += ["--timeout", str(timeout)]
        return _lcp.cli(argv)

    def close(self) -> None:
        """Ends the worker processes (a later call starts new ones)."""
        self._native.close()

    def __enter__(self) -> "Toolbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


__all__ = ["Toolbox", "CallResult", "OUTCOMES"]
