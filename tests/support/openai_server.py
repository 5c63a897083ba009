"""A scripted OpenAI-compatible server (standard library only), so the real `ChatOpenAI` path runs.

`GET /v1/models` lists the models; `POST /v1/chat/completions` answers with the next scripted reply
(plain JSON, or SSE chunks ending `data: [DONE]` when the request asks to stream). Every request body
is recorded for assertions.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = dict[str, Any]
"""`{"content": str}` and/or `{"tool_calls": [{"name": str, "args": dict}]}`."""


def text(content: str) -> Reply:
    return {"content": content}


def call(name: str, **args: Any) -> Reply:
    return {"tool_calls": [{"name": name, "args": args}]}


def streamed(*pieces: str, gate: threading.Event | None = None, then: Reply | None = None) -> Reply:
    """A reply streamed as one SSE chunk per piece of text (then `then`'s tool calls, their arguments in
    three chunks). With `gate`, every piece after the first waits until the test sets it: what the app
    showed by then, it showed while the model was still writing."""
    return {
        "content": "".join(pieces),
        "pieces": list(pieces),
        "gate": gate,
        "tool_calls": (then or {}).get("tool_calls", []),
    }


Router = Callable[[dict[str, Any]], Reply | None]
"""Picks the reply for a request (several conversations at once); None: the next scripted reply."""


class ScriptedOpenAI:
    def __init__(
        self, *, models: list[str] | None = None, api_key: str | None = None, router: Router | None = None
    ) -> None:
        self.models = models if models is not None else ["scripted-model"]
        self.api_key = api_key
        self.router = router
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.sent: list[str] = []
        """The chunks of streamed replies sent so far (text pieces and tool-argument pieces)."""
        self._gates: list[threading.Event] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)
            self._gates += [r["gate"] for r in replies if r.get("gate") is not None]

    def __enter__(self) -> ScriptedOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        for gate in self._gates:
            gate.set()  # a handler still waiting finishes (its client may be gone)
        self._server.shutdown()
        self._server.server_close()

    def _next(self) -> Reply:
        with self._lock:
            if not self.replies:
                return text("(the scripted server has no more replies)")
            return self.replies.popleft()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return None

            def _authorised(self) -> bool:
                if owner.api_key is None:
                    return True
                if self.headers.get("Authorization") == f"Bearer {owner.api_key}":
                    return True
                self._json(401, {"error": {"message": "invalid api key"}})
                return False

            def _json(self, status: int, payload: Any) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if not self._authorised():
                    return
                if self.path.rstrip("/") == "/v1/models":
                    data = [{"id": m, "object": "model", "owned_by": "tests"} for m in owner.models]
                    self._json(200, {"object": "list", "data": data})
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                if not self._authorised():
                    return
                length = int(self.headers.get("Content-Length", "0"))
                request = json.loads(self.rfile.read(length) or b"{}")
                with owner._lock:
                    owner.requests.append(request)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._json(404, {"error": {"message": "not found"}})
                    return
                routed = owner.router(request) if owner.router is not None else None
                reply = routed if routed is not None else owner._next()
                model = request.get("model", "scripted-model")
                if request.get("stream"):
                    self._stream(reply, model)
                else:
                    self._json(200, _completion(reply, model))

            def _stream(self, reply: Reply, model: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                gate = reply.get("gate")
                try:
                    for n, (piece, chunk) in enumerate(_chunks(reply, model)):
                        if n and gate is not None and not gate.wait(30):
                            return  # the test never opened the gate: it has failed already
                        # Noted before it is written: the client may show it before this thread runs again.
                        if piece is not None:
                            with owner._lock:
                                owner.sent.append(piece)
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                except (BrokenPipeError, ConnectionResetError):
                    return  # the client cancelled the request

        return Handler


def _tool_calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {
            "id": f"call_{i}_{int(time.time() * 1000) % 100000}",
            "type": "function",
            "function": {"name": c["name"], "arguments": json.dumps(c["args"])},
        }
        for i, c in enumerate(reply.get("tool_calls", []))
    ]


def _usage() -> dict[str, int]:
    return {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}


def _completion(reply: Reply, model: str) -> dict[str, Any]:
    calls = _tool_calls(reply)
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": _usage(),
    }


def _chunks(reply: Reply, model: str) -> list[tuple[str | None, dict[str, Any]]]:
    """(the piece of text or arguments it carries, chunk) in order."""
    base = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks: list[tuple[str | None, dict[str, Any]]] = []
    pieces = reply.get("pieces") or ([reply["content"]] if reply.get("content") else [])
    for n, piece in enumerate(pieces):
        chunks.append(
            (piece, chunk({"role": "assistant", "content": piece} if n == 0 else {"content": piece}))
        )
    calls = _tool_calls(reply)
    for i, c in enumerate(calls):
        if not reply.get("pieces"):
            chunks.append((None, chunk({"role": "assistant", "tool_calls": [{"index": i, **c}]})))
            continue
        # Streamed like a real model: the call's id and name first, then its arguments in three parts.
        arguments = c["function"]["arguments"]
        head = {"index": i, "id": c["id"], "type": "function", "function": {"name": c["function"]["name"]}}
        chunks.append(
            (None, chunk({"tool_calls": [{**head, "function": {**head["function"], "arguments": ""}}]}))
        )
        third = max(1, len(arguments) // 3)
        for part in (arguments[:third], arguments[third : 2 * third], arguments[2 * third :]):
            chunks.append((part, chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]})))
    finish = "tool_calls" if calls else "stop"
    chunks.append((None, {**chunk({}, finish), "usage": _usage()}))
    return chunks
