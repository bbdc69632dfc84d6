"""An MCP server (the official SDK's MCPServer, over stdio) with a tool that ends the
server's process mid-call, and one that logs and reports progress: lcp's upstream
restart and bridging are tested against it."""

import os

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("crashy")


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


if __name__ == "__main__":
    server.run()
