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
    {"remove": PATH}                         -> {} after removing the file
    "prompts"                                -> {"prompts": [...]}
    {"prompt": NAME, "arguments": {...}}     -> the GetPromptResult as JSON, or {"error": ...}
    "templates"                              -> {"resourceTemplates": [...]}
    {"complete": NAME | URI, "argument": A, "value": V}
                                             -> {"values": [...], "total", "hasMore"} (a URI
                                                with `://` is a resource template's)
    {"subscribe": URI} / {"unsubscribe": URI} -> {} or {"error": ...}
    {"updated": URI, "seconds": S}           -> {"updated": true} once the server said URI
                                                changed (within S seconds), else false
    {"listen": URI, "write": PATH, "text": T, "seconds": S}
                                             -> {"events": [...]}: a `subscriptions/listen`
                                                stream for URI (2026-07-28), the file
                                                written once it is open, its events for S s

The report also has the negotiated protocol version, server info, capabilities and
the message of every elicitation the server sent (`elicitations`; their requested
schemas in `schemas`), the sampling requests (`samplings`), the log messages
(`logs`) and progress notifications (`progress`) it received. `--mode legacy` is the
`initialize` handshake; `--mode auto` probes `server/discover` and uses the
handshake-less protocol when the server has it.

`--elicit accept` answers each elicitation with the next object of `--content` (a
JSON list), or none; `--sample TEXT` makes the client able to sample, its model
answering TEXT; `--roots JSON` makes it share those roots; `--log-level` asks for log messages at that level and above
(`logging/setLevel` in a handshake session, the request's `_meta` otherwise).
"""

import argparse
import json
import os
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
    parser.add_argument("--roots", help="a JSON list of {uri, name}: the client shares these roots")
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

    updated = []

    async def on_message(message):
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            updated.append(root.params.uri)

    options = {}
    if args.elicit != "none":
        options["elicitation_callback"] = on_elicit
    if args.sample is not None:
        options["sampling_callback"] = on_sample
    if args.roots is not None:
        shared = json.loads(args.roots)

        async def on_roots(context):
            return types.ListRootsResult(roots=[types.Root(**root) for root in shared])

        options["list_roots_callback"] = on_roots
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
        server_of(args),
        mode=args.mode,
        logging_callback=on_log,
        message_handler=on_message,
        read_timeout_seconds=300,
        **options,
    ) as client:
        if args.log_level and args.mode == "legacy":
            await client.set_logging_level(args.log_level)
        report["protocol_version"] = client.protocol_version
        report["server_info"] = client.server_info.model_dump(mode="json") if client.server_info else None
        report["capabilities"] = client.server_capabilities.model_dump(mode="json", by_alias=True, exclude_none=True)
        for step in steps:
            report["results"].append(await run(client, step, progress, updated))
    print(json.dumps(report))


def dumped(value):
    return value.model_dump(mode="json", by_alias=True, exclude_none=True)


async def run(client, step, progress, updated):
    try:
        if step == "prompts":
            listed = await client.list_prompts(cache_mode="refresh")
            return {"prompts": [dumped(prompt) for prompt in listed.prompts]}
        if step == "templates":
            listed = await client.list_resource_templates(cache_mode="refresh")
            return {"resourceTemplates": [dumped(template) for template in listed.resource_templates]}
        if "prompt" in step:
            return dumped(await client.get_prompt(step["prompt"], step.get("arguments")))
        if "complete" in step:
            target = step["complete"]
            if "://" in target:
                ref = types.ResourceTemplateReference(type="ref/resource", uri=target)
            else:
                ref = types.PromptReference(type="ref/prompt", name=target)
            result = await client.complete(ref, {"name": step["argument"], "value": step["value"]})
            return dumped(result.completion)
        if "subscribe" in step:
            await client.subscribe_resource(step["subscribe"])
            return {}
        if "unsubscribe" in step:
            await client.unsubscribe_resource(step["unsubscribe"])
            return {}
        if "listen" in step:
            events = []
            async with client.listen(resource_subscriptions=[step["listen"]]) as subscription:
                with open(step["write"], "w") as handle:
                    handle.write(step["text"])
                with anyio.move_on_after(step.get("seconds", 10)):
                    async for event in subscription:
                        events.append({"kind": type(event).__name__, "uri": getattr(event, "uri", None)})
                        if getattr(event, "uri", None) == step["listen"]:
                            break
            return {"events": events}
        if "updated" in step:
            with anyio.move_on_after(step.get("seconds", 10)):
                while step["updated"] not in updated:
                    await anyio.sleep(0.05)
            return {"updated": step["updated"] in updated}
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
        if "remove" in step:
            os.remove(step["remove"])
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
