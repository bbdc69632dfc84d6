#!/usr/bin/env python3
"""Times ``LCPBinding.execute_tool`` of lollms-client on a trivial tool, for the bench suite.

Usage: ``execute_tool_timing.py FOLDER TOOL CALLS --out FILE``.  Constructs the
binding on FOLDER, calls TOOL once (module import, warm-up), then times CALLS calls
of ``execute_tool(TOOL, {"x": 1})`` and CALLS direct calls of the same function
(``timeit``, same process).  Writes JSON to ``--out``: ``execute_tool_s`` and
``direct_s``, seconds per call.  The binding logs through ASCIIColors on stdout;
the bench sends stdout to /dev/null.
"""

import json
import sys
import time
import timeit
from pathlib import Path


def main():
    folder, tool, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
    out = sys.argv[sys.argv.index("--out") + 1]
    from lollms_client.tools_bindings.lcp import LCPBinding

    binding = LCPBinding(tools_folders=[folder])
    first = binding.execute_tool(tool, {"x": 1})
    assert first.get("success") and first.get("output") == 1, first
    definition = next(t for t in binding.discovered_tools if t["name"] == tool)
    function = getattr(binding._get_or_load_tool_module(Path(definition["_python_file_path"])), tool)
    execute = binding.execute_tool
    for _ in range(min(calls, 1000)):
        execute(tool, {"x": 1})
    started = time.perf_counter()
    for _ in range(calls):
        execute(tool, {"x": 1})
    through = (time.perf_counter() - started) / calls
    direct = timeit.timeit("f(x=1)", globals={"f": function}, number=calls) / calls
    with open(out, "w") as f:
        json.dump({"execute_tool_s": through, "direct_s": direct}, f)


if __name__ == "__main__":
    main()
