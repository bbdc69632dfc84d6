"""Drives one MCP session against `lcp serve` with the official Python client.

    mcp_client_session.py --mode legacy|auto [--elicit accept|decline|cancel|none]
                          [--content JSON] [--sample TEXT] [--log-level LEVEL]
                          (--url URL | -- COMMAND ARGS...)

Reads a JSON list of steps on stdin and prints one JSON report on stdout:

    "list"                                   -> {"tools": [...]}
    {"call": NAME, "arguments": {...}}       -> the CallToolResult as JSON, or {"error": {code, message}}
                                             ("progress": true: with a progress token)
    "resources"                              -> {"resources": [...]}
    {"read": URI}                            -> the ReadResourceResult as JSON, or {"error": ...}
    {"write": PATH, "text": TEXT}            -> {} after writing the file (to edit a served config)

The report also has the negotiated protocol version, server info, capabilities and
the message of every elicitation the server sent (`elicitations`; their requested
schemas in `schemas`), the sampling requests (`samplings`), the log messages
(`logs`) and progress notifications (`progress`) it received. `--mode legacy` is the
`initialize` handshake; `--mode auto` probes `server/discover` and uses the
handshake-less protocol when the server has it.

`--elicit accept` answers each elicitation with the next object of `--content` (a
JSON list), or none; `--sample TEXT` makes the client able to sample, its model
answering TEXT; `--log-level` asks for log messages at that level and above
(`logging/setLevel` in a handshake session, the request's `_meta` otherwise).
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
    parser.add_argument("--content", default="[]")
    parser.add_argument("--sample")
    parser.add_argument("--log-level")
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
    elicitations, schemas, samplings, logs, progress = [], [], [], [], []
    contents = json.loads(args.content)

    async def on_elicit(context, params):
        elicitations.append(params.message)
        schemas.append(params.requested_schema)
        content = contents.pop(0) if contents and args.elicit == "accept" else None
        return types.ElicitResult(action=args.elicit, content=content)

    async def on_sample(context, params):
        samplings.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=args.sample), model="test-model"
        )

    async def on_log(params):
        logs.append({"level": params.level, "logger": params.logger, "data": params.data})

    options = {}
    if args.elicit != "none":
        options["elicitation_callback"] = on_elicit
    if args.sample is not None:
        options["sampling_callback"] = on_sample
    if args.log_level and args.mode != "legacy":
        options["log_level"] = args.log_level
    report = {
        "results": [],
        "elicitations": elicitations,
        "schemas": schemas,
        "samplings": samplings,
        "logs": logs,
        "progress": progress,
    }
    async with Client(
        server_of(args), mode=args.mode, logging_callback=on_log, read_timeout_seconds=300, **options
    ) as client:
        if args.log_level and args.mode == "legacy":
            await client.set_logging_level(args.log_level)
        report["protocol_version"] = client.protocol_version
        report["server_info"] = client.server_info.model_dump(mode="json") if client.server_info else None
        report["capabilities"] = client.server_capabilities.model_dump(mode="json", by_alias=True, exclude_none=True)
        for step in steps:
            report["results"].append(await run(client, step, progress))
    print(json.dumps(report))


async def run(client, step, progress):
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
        on_progress = None
        if step.get("progress"):

            async def on_progress(done, total, message):
                progress.append({"progress": done, "total": total, "message": message})

        result = await client.call_tool(step["call"], step.get("arguments", {}), progress_callback=on_progress)
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)
    except MCPError as err:
        return {"error": {"code": err.error.code, "message": err.error.message}}


if __name__ == "__main__":
    anyio.run(main)
