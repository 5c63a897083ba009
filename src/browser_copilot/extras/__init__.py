"""Extra MCP servers (F60): more tools for the agent from `MCP_SERVERS_FILE`, each server under a prefix;
only the tools a server's `read_only_tools` lists run without the user's confirmation.

The servers themselves are in `extras.servers` and `extras.connection` (the MCP client): import them
from there. This package imports only the file's parsing, which settings validation needs at start-up,
before the chat's prompt (the MCP client takes a second or more to load)."""

from browser_copilot.extras.config import ServerConfig, ServersFile, load_servers, parse_servers

__all__ = ["ServerConfig", "ServersFile", "load_servers", "parse_servers"]
