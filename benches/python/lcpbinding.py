#!/usr/bin/env python3
"""Drives the reference ``LCPBinding`` of lollms-client for the bench suite.

Usage: ``lcpbinding.py FOLDER --out FILE [--tracemalloc]``.  Imports the binding,
then constructs it on FOLDER (its constructor walks the folder and parses every file
with ``ast``: that is its whole discovery and schema work; no tool module is
imported).  Writes JSON to ``--out``:

- ``import_s``: importing ``lollms_client.tools_bindings.lcp``;
- ``discover_s``: constructing ``LCPBinding(tools_folders=[FOLDER])``;
- ``tools``: how many tools it discovered;
- ``maxrss_before_kib`` / ``maxrss_after_kib``: ``ru_maxrss`` of this process after
  the import and after discovery;
- with ``--tracemalloc``: ``traced_peak_bytes`` / ``traced_current_bytes``, the peak
  and retained Python allocations during construction (tracing started just before
  it, so the import is not counted; timings of such a run are not used).

The binding logs through ASCIIColors on stdout; the bench sends stdout to /dev/null.
"""

import json
import resource
import sys
import time


def main():
    folder = sys.argv[1]
    out = sys.argv[sys.argv.index("--out") + 1]
    trace = "--tracemalloc" in sys.argv
    started = time.perf_counter()
    from lollms_client.tools_bindings.lcp import LCPBinding
    imported = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if trace:
        import tracemalloc
        tracemalloc.start()
    begin = time.perf_counter()
    binding = LCPBinding(tools_folders=[folder])
    discovered = time.perf_counter()
    result = {
        "import_s": imported - started,
        "discover_s": discovered - begin,
        "tools": len(binding.discovered_tools),
        "maxrss_before_kib": before,
        "maxrss_after_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }
    if trace:
        current, peak = tracemalloc.get_traced_memory()
        result.update(traced_peak_bytes=peak, traced_current_bytes=current)
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
