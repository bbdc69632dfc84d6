"""Drives one MCP session against `lcp serve` with the official Python client.

    mcp_client_session.py --mode legacy|auto [--elicit accept|decline|cancel|none]
                          (--url URL | -- COMMAND ARGS...)

Reads a JSON list of steps on stdin and prints one JSON report on stdout:

    "list"                                   -> {"tools": [...]}
    {"call": NAME, "arguments": {...}}       -> the CallToolResult as JSON, or {"error": {code, message}}
    "resources"                              -> {"resources": [...]}
    {"read": URI}                            -> the ReadResourceResult as JSON, or {"error": ...}
    {"write": PATH, "text": TEXT}            -> {} after writing the file (to edit a served config)

The report also has the negotiated protocol version, server info, capabilities and
the message of every elicitation the server sent. `--mode legacy` is the
`initialize` handshake; `--mode auto` probes `server/discover` and uses the
handshake-less protocol when the server has it.
"""

import argparse
import json
import sys

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", default="auto")
    parser.add_argument("--elicit", default="none", choices=["accept", "decline", "cancel", "none"])
    parser.add_argument("--url")
    parser.add_argument("command", nargs="*")
    return parser.parse_args()


def server_of(args):
    if args.url:
        return args.url
    return StdioServerParameters(command=args.command[0], args=args.command[1:])


async def main():
    args = parse_args()
    steps = json.load(sys.stdin)
    elicitations = []

    async def on_elicit(context, params):
        elicitations.append(params.message)
        return types.ElicitResult(action=args.elicit)

    callback = None if args.elicit == "none" else on_elicit
    report = {"results": [], "elicitations": elicitations}
    async with Client(server_of(args), mode=args.mode, elicitation_callback=callback, read_timeout_seconds=300) as client:
        report["protocol_version"] = client.protocol_version
        report["server_info"] = client.server_info.model_dump(mode="json") if client.server_info else None
        report["capabilities"] = client.server_capabilities.model_dump(mode="json", by_alias=True, exclude_none=True)
        for step in steps:
            report["results"].append(await run(client, step))
    print(json.dumps(report))


async def run(client, step):
    try:
        if step == "list":
            listed = await client.list_tools(cache_mode="refresh")
            return {"tools": [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools]}
        if step == "resources":
            listed = await client.list_resources(cache_mode="refresh")
            return {"resources": [r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in listed.resources]}
        if "read" in step:
            result = await client.read_resource(step["read"])
            return result.model_dump(mode="json", by_alias=True, exclude_none=True)
        if "write" in step:
            with open(step["write"], "w") as handle:
                handle.write(step["text"])
            return {}
        result = await client.call_tool(step["call"], step.get("arguments", {}))
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)
    except MCPError as err:
        return {"error": {"code": err.error.code, "message": err.error.message}}


if __name__ == "__main__":
    anyio.run(main)
