"""An MCP server (the official SDK's MCPServer, over stdio, or over Streamable HTTP on
127.0.0.1:$LCP_TEST_HTTP_PORT when that is set) with a tool that ends the
server's process mid-call, one that logs and reports progress, one that waits until it
is cancelled, and two that some export formats cannot take: lcp's upstream restart,
bridging, cancellation and export are tested against it."""

import atexit
import os
import time
from pathlib import Path

import anyio

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("crashy")

# Written when the process ends by itself (its input closed), never when it is killed.
if os.environ.get("LCP_TEST_EXIT_MARKER"):
    atexit.register(Path(os.environ["LCP_TEST_EXIT_MARKER"]).write_text, "exited by itself")


@server.tool()
def crash() -> str:
    """Ends this server's process before answering."""
    os._exit(3)


@server.tool()
def pid() -> int:
    """This server's process id."""
    return os.getpid()


@server.tool()
async def chatty(ctx: Context) -> str:
    """Logs a line and reports progress twice before answering."""
    await ctx.info("chatty is working")
    await ctx.report_progress(1, 2, "half way")
    await ctx.report_progress(2, 2, "done")
    return "said it all"


@server.tool()
async def wait_for_cancel(marker: str) -> str:
    """Writes `marker`.started, then waits; cancelled, it writes `marker`.cancelled."""
    Path(marker + ".started").write_text("started")
    try:
        await anyio.sleep(120)
    except anyio.get_cancelled_exc_class():
        Path(marker + ".cancelled").write_text("cancelled")
        raise
    return "never cancelled"


@server.tool()
async def block_then_log(marker: str, seconds: float, ctx: Context) -> str:
    """Writes `marker`.started, blocks the whole server for `seconds` (it reads
    nothing meanwhile, a cancel notice included), then logs `late log from <marker>`."""
    Path(marker + ".started").write_text("started")
    time.sleep(seconds)
    await ctx.info(f"late log from {Path(marker).name}")
    return "logged"


@server.tool()
def tally(counts: dict[str, int]) -> int:
    """The sum of counts by name (an open mapping, which OpenAI's strict mode cannot take)."""
    return sum(counts.values())


@server.tool(name="files.count")
def files_count(folder: str) -> int:
    """The entries of a folder (a dotted name, which OpenAI and Anthropic refuse)."""
    return len(os.listdir(folder))


if __name__ == "__main__":
    if os.environ.get("LCP_TEST_HTTP_PORT"):
        server.run("streamable-http", port=int(os.environ["LCP_TEST_HTTP_PORT"]))
    else:
        server.run()
