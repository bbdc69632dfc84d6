"""An MCP server over stdio, or Streamable HTTP on 127.0.0.1:$LCP_TEST_HTTP_PORT when
that is set (over https with $LCP_TEST_TLS_CERT and $LCP_TEST_TLS_KEY when those are)
(the official SDK's MCPServer), whose one tool logs a line
naming its call, waits for a second call to be in progress too (at most
$LCP_TEST_OVERLAP_WAIT seconds, 5 when unset), asks its caller a question and answers
with what it was told and how many of its calls were in progress at once: the
gateway's routing of a server's questions and logs to the call they belong to is
tested against it, with the calls overlapping."""

import os

import anyio
from pydantic import BaseModel

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("asking")
# The calls in progress: how many were at once while each was, the most.
in_progress = []


class Name(BaseModel):
    name: str


@server.tool()
async def ask(tag: str, ctx: Context) -> str:
    """Logs `tag`, waits for another call, asks who is calling, and says `tag` with the
    answer and how many calls were in progress at once."""
    mine = {"at_once": 0}
    in_progress.append(mine)
    for call in in_progress:
        call["at_once"] = max(call["at_once"], len(in_progress))
    try:
        await ctx.info(f"working for {tag}")
        wait = float(os.environ.get("LCP_TEST_OVERLAP_WAIT", "5"))
        with anyio.move_on_after(wait):
            while mine["at_once"] < 2:
                await anyio.sleep(0.02)
        answer = await ctx.elicit(message=f"who asked for {tag}?", schema=Name)
        told = answer.data.name if answer.action == "accept" else answer.action
        return f"{tag} was answered by {told} ({mine['at_once']} at once)"
    finally:
        in_progress.remove(mine)


if __name__ == "__main__":
    if os.environ.get("LCP_TEST_TLS_CERT"):
        # Over https, with the certificate and key the test made.
        import uvicorn

        uvicorn.run(
            server.streamable_http_app(),
            host="127.0.0.1",
            port=int(os.environ["LCP_TEST_HTTP_PORT"]),
            ssl_certfile=os.environ["LCP_TEST_TLS_CERT"],
            ssl_keyfile=os.environ["LCP_TEST_TLS_KEY"],
        )
    elif os.environ.get("LCP_TEST_HTTP_PORT"):
        server.run("streamable-http", port=int(os.environ["LCP_TEST_HTTP_PORT"]))
    else:
        server.run()
