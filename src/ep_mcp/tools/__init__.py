"""The one tool registry shared by MCP, HTTP and the CLI."""

from ep_mcp.tools.registry import ToolContext, ToolSpec, call_tool, get_tool, register, tools

__all__ = ["ToolContext", "ToolSpec", "call_tool", "get_tool", "register", "tools"]
