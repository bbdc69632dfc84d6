"""``python -m lcp_tools``: the ``lcp`` command line, and lcp's worker processes.

``python -m lcp_tools __worker`` is how lcp starts a worker in this interpreter (SPEC §8):
nothing but the native module is imported before the worker enters its sandbox.
"""

import sys


def console() -> None:
    """The console script ``lcp``: every command of the binary, with ``sys.argv``."""
    from lcp_tools import _lcp

    sys.exit(_lcp.cli(["lcp", *sys.argv[1:]]))


def _main() -> None:
    if sys.argv[1:2] == ["__worker"]:
        from lcp_tools import _lcp

        sys.exit(_lcp.worker())
    console()


if __name__ == "__main__":
    _main()
