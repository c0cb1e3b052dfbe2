"""ep-mcp: folders of markdown as a hybrid-search knowledge service for AI agents."""

__version__ = "0.1.0"
