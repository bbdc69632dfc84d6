#!/usr/bin/env python3
"""Runs a command (stdout and stderr to /dev/null) and prints its peak resident set
size in KiB: ``ru_maxrss`` of ``RUSAGE_CHILDREN``, the same figure for any program.

Usage: ``maxrss.py COMMAND [ARG ...]``; exits with the command's status.
"""

import resource
import subprocess
import sys

status = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(status)
