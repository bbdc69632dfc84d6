"""shell: run shell commands inside the workspace, with the user's approval.

A folder library with a single file (``shell/shell.py``). Every command is shown to the
user through the confirm handler first (``handler(command, "Run shell command")``)
unless the autonomy level is ``"full_access"``; with no handler registered, commands
are refused. The command runs with the workspace (or a folder inside it) as working
directory, stdin closed, a time limit, and captured output that is cut to a bounded
size (the start and the end are kept, since errors usually show up last).

The working directory is confined to the workspace, but a shell command itself can
reach anything the process can: this library is only as safe as the user's review of
each command. The library's dynamic prompt, ``tool_shell_prompt()``, tells the model
which shell and common programs are available.
"""

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

import lcp_files

TOOL_LIBRARY_NAME = "Shell"
TOOL_LIBRARY_DESC = (
    "Run shell commands (build, test, git, scripts) in the workspace folder after the user "
    "approves each one; returns the exit code and the captured output."
)
TOOL_LIBRARY_ICON = "💻"
# Declared effects (SPEC §12): a command can do anything the user can, anywhere.
TOOL_POLICY = {"read_only": False, "destructive": True, "idempotent": False, "open_world": True, "grade": {"w": 3, "d": 3}}

AUTONOMY_LEVEL = "safe"  # "strict" | "safe" | "full_access", as the reference
_CONFIRM_HANDLER: Optional[Callable[..., Any]] = None
_ALWAYS_ALLOWED: set[str] = set()
_KNOWN_LEVELS = {"strict", "safe", "full_access"}

_MAX_TIMEOUT_SECONDS = 300
_HEAD_BYTES = 8_000  # kept from the start of each stream
_TAIL_BYTES = 12_000  # kept from the end of each stream
_COMMON_PROGRAMS = ("git", "python3", "python", "pip", "node", "npm", "cargo", "go", "make", "rg", "sqlite3")


def init_tools_library(config: Optional[dict] = None) -> None:
    """Called once by the host when this module is first loaded.

    Args:
        config (dict, optional): Host configuration. Keys used: ``autonomy_level``
            (``"strict"``: every action asks, an "always" answer is not
            remembered; ``"safe"``, the default; ``"full_access"``: nothing asks) and ``confirm_handler``.
    """
    global AUTONOMY_LEVEL, _CONFIRM_HANDLER
    if not isinstance(config, dict):
        return
    level = str(config.get("autonomy_level", "safe") or "safe").strip().lower()
    AUTONOMY_LEVEL = level if level in _KNOWN_LEVELS else "safe"
    handler = config.get("confirm_handler")
    if handler is not None:
        _CONFIRM_HANDLER = handler


def set_confirm_handler(handler: Optional[Callable[..., Any]]) -> None:
    """Store the host's confirmation callback: ``handler(content, label) -> (decision, reason)``."""
    global _CONFIRM_HANDLER
    _CONFIRM_HANDLER = handler


def _normalise_decision(answer: Any) -> tuple[str, str]:
    reason = ""
    if isinstance(answer, (tuple, list)):
        decision = answer[0] if answer else None
        reason = str(answer[1]) if len(answer) > 1 and answer[1] is not None else ""
    elif isinstance(answer, dict):
        decision = answer.get("decision")
        reason = str(answer.get("reason") or "")
    else:
        decision = answer
    if decision is True:
        return "allow", reason
    if decision is False or decision is None:
        return "reject", reason
    text = str(decision).strip().lower()
    if text in {"allow", "always"}:
        return text, reason
    if text in {"reject", "deny"}:
        return "reject", reason
    return "reject", reason or f"unexpected decision {decision!r}"


def _confirm(kind: str, content: str, label: str) -> Optional[str]:
    """Return None when the action may run, else the error text to return."""
    if AUTONOMY_LEVEL == "full_access" or (AUTONOMY_LEVEL != "strict" and kind in _ALWAYS_ALLOWED):
        return None
    if _CONFIRM_HANDLER is None:
        return (
            f"{label} refused: it needs the user's confirmation, but no confirmation handler "
            f"is registered and the autonomy level is '{AUTONOMY_LEVEL}'. Ask the user to run "
            "the command or to grant full access."
        )
    try:
        decision, reason = _normalise_decision(_CONFIRM_HANDLER(content, label))
    except Exception as exc:
        return f"{label} refused: the confirmation handler failed ({type(exc).__name__}: {exc})."
    if decision == "always":
        if AUTONOMY_LEVEL != "strict":
            _ALWAYS_ALLOWED.add(kind)
        return None
    if decision == "allow":
        return None
    return f"{label} rejected by user: {reason or 'no reason given'}"


def _resolve_workdir(workdir: str) -> str:
    """``workdir`` as a folder of the workspace (from the workspace, '.' for itself),
    resolved beneath it; raises ``ValueError`` saying what is wrong."""
    try:
        fd, shown = lcp_files.open_folder((workdir or ".").strip() or ".")
    except lcp_files.PathError as exc:
        raise ValueError(f"workdir: {exc}") from None
    os.close(fd)
    return shown


class _Capture:
    """Keep the first and last bytes of a stream, count the rest."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = _HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > _TAIL_BYTES:
                del self.tail[: len(self.tail) - _TAIL_BYTES]

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        omitted = self.total - len(self.head) - len(self.tail)
        tail = self.tail.decode("utf-8", errors="replace")
        if omitted <= 0:
            return head + tail
        return f"{head}\n[... {omitted} bytes omitted, {self.total} bytes in total ...]\n{tail}"


def _pump(stream: Any, capture: _Capture) -> None:
    try:
        while True:
            chunk = os.read(stream.fileno(), 65536)
            if not chunk:
                break
            capture.feed(chunk)
    except (OSError, ValueError):
        pass
    finally:
        try:
            stream.close()
        except OSError:
            pass


def _kill_tree(process: subprocess.Popen) -> None:
    """Stop the command and everything it started."""
    try:
        if os.name == "nt":
            subprocess.run(["taskkill", "/F", "/T", "/PID", str(process.pid)], capture_output=True, timeout=10)
        else:
            os.killpg(process.pid, signal.SIGKILL)
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        process.kill()
    except OSError:
        pass


def tool_shell_prompt() -> str:
    """Library context for the model: shell, working directory and available programs."""
    shell = os.environ.get("COMSPEC", "cmd.exe") if os.name == "nt" else "/bin/sh"
    available = [name for name in _COMMON_PROGRAMS if shutil.which(name)]
    approval = (
        "Commands run without asking (full access)."
        if AUTONOMY_LEVEL == "full_access"
        else "The user must approve every command, so explain why you run it."
    )
    return (
        f"Shell commands run with {shell} on {sys.platform} in the workspace {Path.cwd()}. "
        f"Programs found: {', '.join(available) if available else 'none of the usual ones'}. "
        f"{approval} Commands cannot read stdin and stop after their timeout."
    )


def tool_run_command(command: str, timeout_seconds: int = 30, workdir: str = ".") -> dict[str, Any]:
    """Runs a shell command in the workspace after the user approves it and returns its
    exit code, standard output and standard error. Use it to build, test, run scripts or
    use command-line programs such as git; prefer the file tools for simply reading or
    writing files. The command gets no input (stdin is closed), and long output keeps
    only its start and end.

    Args:
        command (str): The command line, interpreted by the system shell (/bin/sh
            on Linux and macOS), e.g. "python3 -m pytest -q" or "git status --short".
        timeout_seconds (int, optional): Seconds before the command and all its
            child processes are killed (1 to 300). Defaults to 30.
        workdir (str, optional): Folder to run in, relative to the workspace.
            Defaults to "." (the workspace itself).

    Returns:
        dict: ``{"success": True, "output": {"command", "workdir", "exit_code",
        "stdout", "stderr", "duration_seconds", "timed_out": False, "note"?}}``
        when the command ran (check ``exit_code``: 0 usually means success). On
        timeout ``{"success": False, "error": str, "output": {...partial output...}}``;
        when rejected or impossible to start ``{"success": False, "error": str}``.

    Examples:
        {"command": "echo hello"}
    """
    if not command or not command.strip():
        return {"success": False, "error": "command is empty."}
    if "\x00" in command:
        return {"success": False, "error": "command contains a NUL character, which no shell command can hold."}
    try:
        cwd = _resolve_workdir(workdir)
    except (ValueError, OSError) as exc:
        return {"success": False, "error": str(exc)}
    timeout = max(1, min(_MAX_TIMEOUT_SECONDS, int(timeout_seconds)))

    refusal = _confirm("shell", command, "Run shell command")
    if refusal:
        return {"success": False, "error": refusal}

    env = dict(os.environ)
    env.update({"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"})
    options: dict[str, Any] = {
        "shell": True,
        "cwd": os.path.join(os.getcwd(), cwd),
        "env": env,
        "stdin": subprocess.DEVNULL,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
    }
    if os.name == "nt":
        options["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP
    else:
        options["start_new_session"] = True  # own process group, so a timeout kills children too

    started = time.monotonic()
    try:
        process = subprocess.Popen(command, **options)
    except OSError as exc:
        return {"success": False, "error": f"Could not start the command: {exc}"}

    captures = (_Capture(), _Capture())
    readers = [
        threading.Thread(target=_pump, args=(stream, capture), daemon=True)
        for stream, capture in zip((process.stdout, process.stderr), captures)
    ]
    for reader in readers:
        reader.start()

    timed_out = False
    try:
        exit_code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        exit_code = None
    finally:
        # Whatever ends the wait (the command's own timeout, or the host stopping the
        # call with an exception), nothing the command started outlives it.
        _kill_tree(process)
    if exit_code is None:
        exit_code = process.wait()
    for reader in readers:
        reader.join(timeout=2 if not timed_out else 5)
    streams_open = any(reader.is_alive() for reader in readers)
    duration = round(time.monotonic() - started, 3)

    output: dict[str, Any] = {
        "command": command,
        "workdir": cwd,
        "exit_code": exit_code,
        "stdout": captures[0].text(),
        "stderr": captures[1].text(),
        "duration_seconds": duration,
        "timed_out": timed_out,
    }
    notes = []
    for label, capture in zip(("stdout", "stderr"), captures):
        if capture.total > _HEAD_BYTES + _TAIL_BYTES:
            notes.append(
                f"{label} was {capture.total} bytes; only the first {_HEAD_BYTES} and the last "
                f"{_TAIL_BYTES} bytes are shown."
            )
    if streams_open and not timed_out:
        notes.append("A background process still holds the output streams; its later output is not captured.")
    if notes:
        output["note"] = " ".join(notes)
    if timed_out:
        return {
            "success": False,
            "error": (
                f"The command did not finish within {timeout} seconds and was killed; "
                "its partial output is in 'output'."
            ),
            "output": output,
        }
    return {"success": True, "output": output}
