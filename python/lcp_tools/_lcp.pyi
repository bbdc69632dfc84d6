"""The native module: lcp itself (src/pymodule.rs). Values cross as JSON text;
``lcp_tools.Toolbox`` and ``lcp_tools.LCPBinding`` are the APIs to use."""

from os import PathLike
from typing import Callable, Optional, Sequence, Union

_Path = Union[str, PathLike[str]]
_Handler = Callable[[str], Optional[str]]

__version__: str

def cli(argv: Sequence[str]) -> int:
    """Runs the ``lcp`` command line ``argv`` (program name first); its exit code."""

def worker() -> int:
    """Serves as a worker process (``python -m lcp_tools __worker``); started by lcp only."""

def default_tools() -> str:
    """The folder of lcp's built-in tool libraries."""

class Toolbox:
    def __init__(
        self,
        folders: Sequence[_Path],
        files: Sequence[_Path],
        config: Optional[str] = None,
        profile: Optional[str] = None,
        workspace: Optional[_Path] = None,
        venv: Optional[_Path] = None,
        in_process: bool = False,
        libraries: Optional[str] = None,
        autonomy: Optional[str] = None,
    ) -> None: ...
    def export(self, format: str, strict: bool = False, static_only: bool = False, vouch: bool = True) -> str: ...
    def check(self) -> str: ...
    def call(
        self,
        name: str,
        arguments: str,
        workspace: Optional[_Path] = None,
        timeout: Optional[float] = None,
        confirm: Optional[_Handler] = None,
        interact: Optional[_Handler] = None,
        progress: Optional[_Handler] = None,
        log: Optional[_Handler] = None,
        generate: Optional[_Handler] = None,
        vision: bool = False,
    ) -> str: ...
    def prompt_descriptions(self, workspace: Optional[_Path] = None) -> str: ...
    def set_confirm_handler(self, handler: _Handler) -> None: ...
    def set_user_interaction_handler(self, handler: _Handler) -> None: ...
    def close(self) -> None: ...
