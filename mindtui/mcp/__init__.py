"""The MCP front end: `mindtui mcp` serves the service's reads (audience `agent`) to AI agents
over the Model Context Protocol (stdio). The SDK is imported here only, never by the service."""

from mindtui.mcp.server import serve

__all__ = ["serve"]
