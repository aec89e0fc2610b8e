"""A tiny recorded-response HTTP server for tests (Azure, GCP, Kubernetes, pricing APIs...).

Serves canned JSON on 127.0.0.1 (port 0: the OS picks a free one) and records every request,
so a test can point a real SDK client at `server.url` and then assert on what was called.

    with RecordedServer() as srv:
        srv.add("GET", "/v1/things", body={"items": [...]})
        srv.add("GET", "/v1/things", query={"pageToken": "p2"}, body={"items": [...]})
        srv.add("DELETE", "/v1/things/a", responses=[{"status": 500}, {"status": 204}])
        srv.add_lro("DELETE", "/v1/things/b", header="Azure-AsyncOperation", polls=1)
        srv.load("tests/fixtures/recorded/azure/vms.json")   # same routes, as JSON
        client = make_client(endpoint=srv.url)
        ...
        assert srv.paths("DELETE") == ["/v1/things/a", "/v1/things/b"]

Matching: method + exact path (`*` in a route path matches one path segment); a route's
`query` (optional) must be a subset of the request's query string, and when several routes
match, the one naming the most query keys wins, then the first added. So a page-2 route
(`{"pageToken": "p2"}`) beats the plain page-1 route for the same path.

Responses: a route has one response or a sequence (`responses=[...]`), served in order with
the last one repeated. A response is {"status": 200, "headers": {...}, "body": <json>|str}.
The text `{{base_url}}` anywhere in a body or header is replaced by the server's own URL, so
fixtures can carry absolute links (Azure `nextLink`, `Azure-AsyncOperation`, `Location`).

WebSocket routes (`add_ws(path, handler)`, tests/recorded_ws.py): an upgrade request for the
path is answered 101 and handed, as a WsPeer, to handler(peer, query string): the Kubernetes
exec and port-forward subresources that kubernetes.stream speaks.

An unmatched request gets a 404 JSON error (Azure/GCP-shaped enough for SDKs to raise a
not-found error) and is kept in `server.unmatched` so tests can fail loudly on surprises.

Fixture files (`load`) hold {"routes": [route, ...]} or a bare list of routes, where a route
is {"method", "path", "query"?, "status"?, "headers"?, "body"?, "responses"?}.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

BASE_URL_TOKEN = "{{base_url}}"


@dataclass
class Request:
    """One request the server received."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    matched: bool = True

    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass
class Route:
    method: str
    path: str
    query: dict[str, str] = field(default_factory=dict)
    responses: list[dict] = field(default_factory=list)
    served: int = 0

    def matches(self, method: str, path: str, query: dict[str, str]) -> bool:
        if method != self.method:
            return False
        want, got = self.path.strip("/").split("/"), path.strip("/").split("/")
        if len(want) != len(got) or any(w not in ("*", g) for w, g in zip(want, got)):
            return False
        return all(query.get(k) == str(v) for k, v in self.query.items())

    def next_response(self) -> dict:
        resp = self.responses[min(self.served, len(self.responses) - 1)]
        self.served += 1
        return resp


class RecordedServer:
    """Threaded JSON server on 127.0.0.1; use as a context manager or start()/stop()."""

    def __init__(self, routes: list[dict] | None = None, host: str = "127.0.0.1", port: int = 0):
        self._routes: list[Route] = []
        self._ws_routes: list[tuple[Route, Any]] = []
        self._lock = threading.Lock()
        self._lro_count = 0
        self.requests: list[Request] = []
        self._httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None
        for r in routes or []:
            self.add(**r)

    # ---- lifecycle -------------------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> RecordedServer:
        if self._thread is None:
            self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> RecordedServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ---- routes ----------------------------------------------------------------------
    def add(self, method: str, path: str, *, query: dict | None = None, status: int = 200,
            headers: dict | None = None, body: Any = None,
            responses: list[dict] | None = None) -> Route:
        """Serve `body` (or each of `responses` in turn) for method + path (+ query subset)."""
        if responses is None:
            responses = [{"status": status, "headers": headers or {}, "body": body}]
        route = Route(method.upper(), urlsplit(path).path,
                      {k: str(v) for k, v in (query or {}).items()}, list(responses))
        with self._lock:
            self._routes.append(route)
        return route

    def add_ws(self, path: str, handler) -> None:
        """An upgrade to a WebSocket at `path` (`*` matches a segment): handler(peer, query)."""
        with self._lock:
            self._ws_routes.append((Route("GET", urlsplit(path).path), handler))

    def _upgrade(self, http) -> bool:
        """Serve a WebSocket route for this request; False when none matches (a 404 follows)."""
        import sys
        if str(Path(__file__).parent) not in sys.path:   # tests/ holds recorded_ws, its sibling
            sys.path.insert(0, str(Path(__file__).parent))
        from recorded_ws import handshake

        parts = urlsplit(http.path)
        with self._lock:
            found = next((h for r, h in self._ws_routes if r.matches("GET", parts.path, {})), None)
            self.requests.append(Request("GET", parts.path,
                                         dict(parse_qsl(parts.query, keep_blank_values=True)),
                                         dict(http.headers.items()), b"", matched=found is not None))
        if found is None:
            return False
        found(handshake(http), parts.query)
        return True

    def add_lro(self, method: str, path: str, *, header: str = "Azure-AsyncOperation",
                polls: int = 1, accepted_status: int = 202, accepted_body: Any = None,
                running: Any = None, done: Any = None, status_path: str | None = None) -> str:
        """A long-running operation: `method path` answers `accepted_status` with `header`
        pointing at a status URL, which reports `running` `polls` times, then `done`.

        Defaults fit Azure ARM ({"status": "InProgress"} -> {"status": "Succeeded"}); for a
        plain `Location` poll pass header="Location". Returns the status path.
        """
        with self._lock:
            self._lro_count += 1
            n = self._lro_count
        status_path = status_path or f"/_lro/{n}"
        self.add(method, path, status=accepted_status, body=accepted_body,
                 headers={header: BASE_URL_TOKEN + status_path, "Retry-After": "0"})
        running = {"status": "InProgress"} if running is None else running
        done = {"status": "Succeeded"} if done is None else done
        seq = [{"status": 200, "body": running, "headers": {"Retry-After": "0"}}] * polls
        self.add("GET", status_path, responses=seq + [{"status": 200, "body": done}])
        return status_path

    def load(self, fixture: str | Path) -> None:
        """Add every route of a JSON fixture file ({"routes": [...]} or a list)."""
        data = json.loads(Path(fixture).read_text())
        for r in data["routes"] if isinstance(data, dict) else data:
            r = dict(r)
            if "lro" in r:  # {"method", "path", "lro": {add_lro kwargs}}
                self.add_lro(r["method"], r["path"], **r["lro"])
            else:
                self.add(**r)

    # ---- assertions helpers ------------------------------------------------------------
    def calls(self, method: str | None = None, path_prefix: str = "") -> list[Request]:
        with self._lock:
            return [r for r in self.requests
                    if (method is None or r.method == method.upper())
                    and r.path.startswith(path_prefix)]

    def paths(self, method: str | None = None, path_prefix: str = "") -> list[str]:
        return [r.path for r in self.calls(method, path_prefix)]

    @property
    def unmatched(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if not r.matched]

    def reset_requests(self) -> None:
        with self._lock:
            self.requests.clear()

    # ---- internals ---------------------------------------------------------------------
    def _dispatch(self, method: str, raw_path: str, headers: dict, body: bytes):
        parts = urlsplit(raw_path)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        with self._lock:
            candidates = [r for r in self._routes if r.matches(method, parts.path, query)]
            # Most specific query wins; among equals, the first added (stable sort).
            candidates.sort(key=lambda r: -len(r.query))
            route = candidates[0] if candidates else None
            resp = route.next_response() if route else None
            self.requests.append(Request(method, parts.path, query, headers, body,
                                         matched=route is not None))
        if resp is None:
            msg = f"no recorded response for {method} {parts.path}"
            return 404, {}, {"error": {"code": "NotFound", "message": msg, "status": "NOT_FOUND"}}
        return resp.get("status", 200), resp.get("headers") or {}, resp.get("body")

    def _handler_class(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self):
                if self.headers.get("Upgrade", "").lower() == "websocket" and server._upgrade(self):
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status, headers, payload = server._dispatch(
                    self.command, self.path, dict(self.headers.items()), body)
                if payload is None:
                    data = b""
                elif isinstance(payload, (bytes, str)):
                    data = payload.encode() if isinstance(payload, str) else payload
                else:
                    data = json.dumps(payload).encode()
                data = data.replace(BASE_URL_TOKEN.encode(), server.url.encode())
                self.send_response(status)
                if data:
                    self.send_header("Content-Type", "application/json")
                for k, v in headers.items():
                    self.send_header(k, str(v).replace(BASE_URL_TOKEN, server.url))
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if data and self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _serve

            def log_message(self, *args):  # keep pytest output clean
                pass

        return Handler
