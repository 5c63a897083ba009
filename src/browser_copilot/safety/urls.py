"""Where the agent's tab may be (F46): http(s) and about:blank, and optional allow/deny domain lists.
Checked after every action, because redirects bypass any check made before navigating."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit


def _matches(host: str, domain: str) -> bool:
    domain = domain.lower().lstrip(".")
    return host == domain or host.endswith("." + domain)


@dataclass(frozen=True, slots=True)
class UrlPolicy:
    allowed: tuple[str, ...] = field(default_factory=tuple)
    """When set, only these domains (and their subdomains)."""
    blocked: tuple[str, ...] = field(default_factory=tuple)

    def problem(self, url: str) -> str | None:
        """None when the URL is allowed; otherwise why not."""
        if url in ("about:blank", "") or url.startswith("chrome-error://"):
            return None
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            return f"{parts.scheme}: URLs are not allowed (only http, https and about:blank)"
        host = (parts.hostname or "").lower()
        if any(_matches(host, d) for d in self.blocked):
            return f"{host} is on the blocked list (BLOCKED_DOMAINS)"
        if self.allowed and not any(_matches(host, d) for d in self.allowed):
            return f"{host} is not on the allowed list (ALLOWED_DOMAINS)"
        return None
