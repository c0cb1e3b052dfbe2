"""The MCP server: tools, resources, prompts, the guide and skill publishing."""
