"""Browser Copilot: an agent that works in your own logged-in Chrome/Edge."""

__version__ = "0.1.0"
