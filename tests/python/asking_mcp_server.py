"""An MCP server over stdio, or Streamable HTTP on 127.0.0.1:$LCP_TEST_HTTP_PORT when
that is set (the official SDK's MCPServer), whose one tool logs a line
naming its call, waits a moment (so that two callers' calls overlap), asks its caller
a question and answers with what it was told: the gateway's routing of a server's
questions and logs to the call they belong to is tested against it."""

import os

import anyio
from pydantic import BaseModel

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("asking")


class Name(BaseModel):
    name: str


@server.tool()
async def ask(tag: str, ctx: Context) -> str:
    """Logs `tag`, waits a moment, asks who is calling, and says `tag` with the answer."""
    await ctx.info(f"working for {tag}")
    await anyio.sleep(0.5)
    answer = await ctx.elicit(message=f"who asked for {tag}?", schema=Name)
    told = answer.data.name if answer.action == "accept" else answer.action
    return f"{tag} was answered by {told}"


if __name__ == "__main__":
    if os.environ.get("LCP_TEST_HTTP_PORT"):
        server.run("streamable-http", port=int(os.environ["LCP_TEST_HTTP_PORT"]))
    else:
        server.run()
