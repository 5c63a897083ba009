"""Extra MCP servers (F60): more tools for the agent from `MCP_SERVERS_FILE`, each server under a prefix;
only the tools a server's `read_only_tools` lists run without the user's confirmation."""

from browser_copilot.extras.config import ServerConfig, ServersFile, load_servers, parse_servers
from browser_copilot.extras.connection import CallResult, ExtraServer, RemoteTool
from browser_copilot.extras.servers import ExtraServers

__all__ = [
    "CallResult",
    "ExtraServer",
    "ExtraServers",
    "RemoteTool",
    "ServerConfig",
    "ServersFile",
    "load_servers",
    "parse_servers",
]
