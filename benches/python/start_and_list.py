"""The official MCP Python client's start-and-list of a stdio server: from starting the
server's process to holding its `tools/list`, `runs` times, in seconds, one per line.

    python start_and_list.py RUNS COMMAND [ARGS...]

The client's own import is outside the timed part: only the server's start, the
handshake and the listing are timed (the session is closed after each run)."""

import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def once(params: StdioServerParameters) -> float:
    started = time.perf_counter()
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            took = time.perf_counter() - started
    assert listed.tools, "the server lists tools"
    return took


async def main() -> None:
    runs = int(sys.argv[1])
    params = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:])
    for _ in range(runs):
        print(await once(params), flush=True)


anyio.run(main)
