"""An MCP server (the official SDK's MCPServer, over stdio) with a tool that ends the
server's process mid-call: lcp's upstream restart is tested against it."""

import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("crashy")


@server.tool()
def crash() -> str:
    """Ends this server's process before answering."""
    os._exit(3)


@server.tool()
def pid() -> int:
    """This server's process id."""
    return os.getpid()


if __name__ == "__main__":
    server.run()
