#!/usr/bin/env python3
"""Drives the reference ``LCPBinding`` of lollms-client for the bench suite.

Usage: ``lcpbinding.py FOLDER --out FILE [--tracemalloc]``.  Imports the binding,
then constructs it on FOLDER (its constructor walks the folder and parses every file
with ``ast``: that is its whole discovery and schema work; no tool module is
imported).  Writes JSON to ``--out``:

- ``import_s``: importing ``lollms_client.tools_bindings.lcp``;
- ``discover_s``: constructing ``LCPBinding(tools_folders=[FOLDER])``;
- ``tools``: how many tools it discovered;
- ``vmhwm_before_kib`` / ``vmhwm_after_kib``: this process's peak RSS (``VmHWM``)
  before and after the construction (not ``ru_maxrss``, which a spawned child
  inherits from its parent at ``exec``);
- ``vmrss_before_kib`` / ``vmrss_after_kib``: its current RSS (``VmRSS``) just before
  and just after the construction;
- with ``--tracemalloc``: ``traced_peak_bytes`` / ``traced_current_bytes``, the peak
  and retained Python allocations during construction (tracing started just before
  it, so the import is not counted; timings of such a run are not used).

The binding logs through ASCIIColors on stdout; the bench sends stdout to /dev/null.
"""

import json
import re
import sys
import time


def status_kib(field):
    with open("/proc/self/status") as status:
        return int(re.search(r"^%s:\s*(\d+)" % field, status.read(), re.M).group(1))


def main():
    folder = sys.argv[1]
    out = sys.argv[sys.argv.index("--out") + 1]
    trace = "--tracemalloc" in sys.argv
    started = time.perf_counter()
    from lollms_client.tools_bindings.lcp import LCPBinding
    imported = time.perf_counter()
    rss_before, hwm_before = status_kib("VmRSS"), status_kib("VmHWM")
    if trace:
        import tracemalloc
        tracemalloc.start()
    begin = time.perf_counter()
    binding = LCPBinding(tools_folders=[folder])
    discovered = time.perf_counter()
    rss_after, hwm_after = status_kib("VmRSS"), status_kib("VmHWM")
    result = {
        "import_s": imported - started,
        "discover_s": discovered - begin,
        "tools": len(binding.discovered_tools),
        "vmhwm_before_kib": hwm_before,
        "vmhwm_after_kib": hwm_after,
        "vmrss_before_kib": rss_before,
        "vmrss_after_kib": rss_after,
    }
    if trace:
        current, peak = tracemalloc.get_traced_memory()
        result.update(traced_peak_bytes=peak, traced_current_bytes=current)
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
