"""Measures `lcp serve`: start-up time and the `tools/call` round trip of a trivial
tool through the official Python MCP client. Not part of the test suite.

    cargo build --release
    target/test-venv/bin/python tests/python/mcp_client_timing.py target/release/lcp [CALLS]

Start-up: from spawning `lcp serve fixtures/mcp/results` to its answer to
`initialize` (raw JSON-RPC over pipes, no client library), median of 20 starts.
Round trip: `client.call_tool("tool_add", {"a": 1, "b": 2})` after one warm-up call
(the first call also starts Python and imports the library, reported apart), for
both lifecycles over stdio.
"""

import json
import statistics
import subprocess
import sys
import time

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

FOLDER = "fixtures/mcp/results"


def startup(lcp, runs=20):
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        process = subprocess.Popen(
            [lcp, "serve", FOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        process.stdin.write((json.dumps(initialize) + "\n").encode())
        process.stdin.flush()
        process.stdout.readline()
        times.append(time.perf_counter() - start)
        process.stdin.close()
        process.wait()
    return statistics.median(times)


async def round_trips(lcp, mode, calls):
    server = StdioServerParameters(command=lcp, args=["serve", FOLDER])
    start = time.perf_counter()
    async with Client(server, mode=mode) as client:
        connected = time.perf_counter() - start
        protocol = client.protocol_version
        start = time.perf_counter()
        await client.call_tool("tool_add", {"a": 1, "b": 2})
        first = time.perf_counter() - start
        times = []
        for i in range(calls):
            start = time.perf_counter()
            result = await client.call_tool("tool_add", {"a": i, "b": 1})
            times.append(time.perf_counter() - start)
            assert result.structured_content == {"result": i + 1}, result
    times.sort()
    return {
        "mode": mode,
        "protocol": protocol,
        "connect_ms": round(connected * 1000, 2),
        "first_call_ms": round(first * 1000, 2),
        "median_ms": round(statistics.median(times) * 1000, 3),
        "p99_ms": round(times[int(len(times) * 0.99) - 1] * 1000, 3),
        "calls": calls,
    }


async def main():
    lcp = sys.argv[1]
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    print(json.dumps({"startup_to_initialize_ms": round(startup(lcp) * 1000, 2)}))
    for mode in ("legacy", "auto"):
        print(json.dumps(await round_trips(lcp, mode, calls)))


if __name__ == "__main__":
    anyio.run(main)
