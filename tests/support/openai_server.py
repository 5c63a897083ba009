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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = dict[str, Any]
"""`{"content": str}` and/or `{"tool_calls": [{"name": str, "args": dict}]}`."""


def text(content: str) -> Reply:
    return {"content": content}


def call(name: str, **args: Any) -> Reply:
    return {"tool_calls": [{"name": name, "args": args}]}


class ScriptedOpenAI:
    def __init__(self, *, models: list[str] | None = None, api_key: str | None = None) -> None:
        self.models = models if models is not None else ["scripted-model"]
        self.api_key = api_key
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
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

    def __enter__(self) -> ScriptedOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
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
                reply = owner._next()
                model = request.get("model", "scripted-model")
                if request.get("stream"):
                    self._stream(reply, model)
                else:
                    self._json(200, _completion(reply, model))

            def _stream(self, reply: Reply, model: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for chunk in _chunks(reply, model):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

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


def _chunks(reply: Reply, model: str) -> list[dict[str, Any]]:
    base = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }
    chunks: list[dict[str, Any]] = []
    if reply.get("content"):
        delta = {"role": "assistant", "content": reply["content"]}
        chunks.append({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    calls = _tool_calls(reply)
    for i, c in enumerate(calls):
        delta = {"role": "assistant", "tool_calls": [{"index": i, **c}]}
        chunks.append({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    finish = "tool_calls" if calls else "stop"
    chunks.append(
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": _usage()}
    )
    return chunks
