"""Many concurrent `tools/call`s against `lcp serve --http` with the official client.

    mcp_client_soak.py URL

Reads a JSON list of calls (`{"call": NAME, "arguments": {...}}`) on stdin, sends them
all at once in one session, and prints a JSON list with one entry per call, in order:
the CallToolResult as JSON, or `{"error": {code, message}}`.
"""

import json
import sys

import anyio
from mcp import Client
from mcp.shared.exceptions import MCPError


async def main():
    url = sys.argv[1]
    calls = json.load(sys.stdin)
    results = [None] * len(calls)
    async with Client(url, read_timeout_seconds=300) as client:

        async def one(index, step):
            try:
                result = await client.call_tool(step["call"], step.get("arguments", {}))
                results[index] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
            except MCPError as err:
                results[index] = {"error": {"code": err.error.code, "message": err.error.message}}

        async with anyio.create_task_group() as group:
            for index, step in enumerate(calls):
                group.start_soon(one, index, step)
    print(json.dumps(results))


if __name__ == "__main__":
    anyio.run(main)
