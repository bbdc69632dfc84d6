"""lcp for Python hosts: tool files read without running them, and run in lcp's
supervised, sandboxed worker processes with this interpreter and its site-packages.

- ``Toolbox``: the Pythonic API (``tools``, ``export``, ``check``, ``call``, ``acall``,
  ``serve``).
- ``LCPBinding``: a drop-in for lollms-client's ``LCPBinding``.

Both are imported on first use: a worker (``python -m lcp_tools __worker``) imports
only the native module.
"""

from typing import TYPE_CHECKING

__all__ = ["Toolbox", "CallResult", "LCPBinding", "BindingName"]

BindingName = "LCPBinding"

if TYPE_CHECKING:
    from lcp_tools.binding import LCPBinding
    from lcp_tools.toolbox import CallResult, Toolbox


def __getattr__(name: str):
    if name in ("Toolbox", "CallResult"):
        from lcp_tools import toolbox

        return getattr(toolbox, name)
    if name == "LCPBinding":
        from lcp_tools.binding import LCPBinding

        return LCPBinding
    raise AttributeError(f"module 'lcp_tools' has no attribute {name!r}")
