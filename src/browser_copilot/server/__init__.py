"""Server mode (F56): the same agent behind HTTP on 127.0.0.1 — a web page, a WebSocket chat per
session, an SSE event stream, REST for the rest; token and Origin checked on every request."""
