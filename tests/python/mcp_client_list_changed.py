"""Drops a tool file into a folder `lcp serve` serves, then removes it, and reports
what the official Python MCP client saw.

    mcp_client_list_changed.py --mode legacy|auto --drop FILE --into DIR
                               --call NAME [--arguments JSON] (--url URL | -- COMMAND ARGS...)

Each change must produce `notifications/tools/list_changed`: through the session's
message handler after an `initialize` handshake (`legacy`), through a
`subscriptions/listen` stream on the handshake-less protocol (`auto`). Prints
{"before", "after_drop", "call", "after_remove"} (tool names and the call result).
"""

import argparse
import json
import shutil
from pathlib import Path

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

WAIT_SECONDS = 120


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", default="auto")
    parser.add_argument("--drop", required=True)
    parser.add_argument("--into", required=True)
    parser.add_argument("--call", required=True)
    parser.add_argument("--arguments", default="{}")
    parser.add_argument("--url")
    parser.add_argument("command", nargs="*")
    return parser.parse_args()


async def names(client):
    listed = await client.list_tools(cache_mode="refresh")
    return [tool.name for tool in listed.tools]


async def main():
    args = parse_args()
    dropped = Path(args.into) / Path(args.drop).name
    changed = anyio.Event()

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    server = args.url or StdioServerParameters(command=args.command[0], args=args.command[1:])
    report = {}
    async with Client(server, mode=args.mode, message_handler=on_message, read_timeout_seconds=300) as client:
        report["protocol_version"] = client.protocol_version
        report["before"] = await names(client)
        if args.mode == "legacy":
            for change in (lambda: shutil.copy(args.drop, dropped), dropped.unlink):
                changed = anyio.Event()
                change()
                with anyio.fail_after(WAIT_SECONDS):
                    await changed.wait()
                await after(client, args, report, removed=change == dropped.unlink)
        else:
            async with client.listen(tools_list_changed=True) as subscription:
                events = subscription.__aiter__()
                for change in (lambda: shutil.copy(args.drop, dropped), dropped.unlink):
                    change()
                    with anyio.fail_after(WAIT_SECONDS):
                        event = await events.__anext__()
                    report.setdefault("events", []).append(type(event).__name__)
                    await after(client, args, report, removed=change == dropped.unlink)
    print(json.dumps(report))


async def after(client, args, report, removed):
    if removed:
        report["after_remove"] = await names(client)
        return
    report["after_drop"] = await names(client)
    result = await client.call_tool(args.call, json.loads(args.arguments))
    report["call"] = result.model_dump(mode="json", by_alias=True, exclude_none=True)


if __name__ == "__main__":
    anyio.run(main)
