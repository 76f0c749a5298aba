"""A real stdio MCP server written with the SDK's FastMCP (`MCPServer` in mcp 2.x): the fixture the
import tests list. Four tools: one annotated read-only, one destructive, one idempotent, one without
annotations. Its tools are never called by the harness; their bodies only make the server honest."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("fixture-files")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def read_note(path: str) -> str:
    """Read a note."""
    return path


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False))
def delete_note(path: str, recursive: bool = False) -> str:
    """Delete a note."""
    return path


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True,
                                         openWorldHint=False))
def set_status(ticket_id: str, status: str) -> str:
    """Set a ticket's status."""
    return ticket_id + status


@server.tool()
def send_message(channel: str, text: str) -> str:
    """Post a message."""
    return channel + text


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 1:  # a port: streamable HTTP on it (the `--url` test), else stdio
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
    else:
        server.run()
