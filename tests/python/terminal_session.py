"""Runs a command with a terminal as its standard input and error, as a user would.

    terminal_session.py WAIT_FOR TYPED -- COMMAND ARGS...

Waits until the terminal shows WAIT_FOR, types TYPED and a newline, then prints one
JSON object: {"terminal": everything the terminal showed, "stdout": the command's
standard output (a pipe), "status": its exit status}.
"""

import json
import os
import pty
import select
import subprocess
import sys
import time


def main():
    wait_for, typed = sys.argv[1].encode(), sys.argv[2].encode()
    command = sys.argv[sys.argv.index("--") + 1 :]
    master, slave = pty.openpty()
    child = subprocess.Popen(command, stdin=slave, stdout=subprocess.PIPE, stderr=slave, close_fds=True)
    os.close(slave)
    shown = b""

    def read(seconds):
        nonlocal shown
        ready, _, _ = select.select([master], [], [], seconds)
        if ready:
            try:
                shown += os.read(master, 65536)
            except OSError:
                pass

    deadline = time.monotonic() + 60
    while wait_for not in shown and time.monotonic() < deadline and child.poll() is None:
        read(0.1)
    os.write(master, typed + b"\n")
    stdout, _ = child.communicate(timeout=60)
    for _ in range(5):
        read(0.05)
    os.close(master)
    print(json.dumps({"terminal": shown.decode(errors="replace"), "stdout": stdout.decode(), "status": child.returncode}))


main()
