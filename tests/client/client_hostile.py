"""Misbehaving servers on 127.0.0.1 (ephemeral ports) for the client's failure paths.

``hostile_ws_server`` is a real ``websockets`` server; the first path segment of the base URL picks how it
misbehaves (``{url}/malformed`` -> ``ws://.../malformed/ws``); ``slowthenok`` answers only when the test releases
its ``LateAnswer``. ``TaskAPIProxy`` is a real HTTP server that
forwards to a real OpenEnv server but can answer 501 for chosen routes, never answer, or send a non-JSON body.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
from websockets.asyncio.server import ServerConnection, serve
from websockets.http11 import Response
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed

_OBSERVATION = {"type": "observation", "data": {"observation": {"question": "1 + 1 ="}, "reward": None, "done": False}}


class LateAnswer:
    """The ``slowthenok`` mode's answer: held until ``release`` is set (after the client gave up), then ``sent``."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.sent = asyncio.Event()


async def _handler(ws: ServerConnection, late: LateAnswer | None) -> None:
    mode = ws.request.path.strip("/").split("/")[0]
    if mode == "capacity":  # what openenv sends when at its limit: one error frame right after accept, then close
        await ws.send(json.dumps({"type": "error", "data": {"message": "at capacity", "code": "CAPACITY_REACHED", "active_sessions": 1, "max_sessions": 1}}))
        await ws.close()
        return
    async for _message in ws:
        if mode == "malformed":
            await ws.send("this is not json {")
        elif mode == "binary":
            await ws.send(b"\x00\x01")
        elif mode == "untyped":
            await ws.send(json.dumps({"data": {}}))
        elif mode == "wrongtype":
            await ws.send(json.dumps({"type": "state", "data": {"step_count": 0}}))
        elif mode == "badreward":
            await ws.send(json.dumps({"type": "observation", "data": {"observation": {}, "reward": "high", "done": False}}))
        elif mode == "silent":
            continue
        elif mode == "closeearly":
            await ws.close(code=1011, reason="going away")
            return
        elif mode == "slowthenok":  # answers late: after the client gave up, the stale answer must not be read
            await late.release.wait()
            with contextlib.suppress(ConnectionClosed):  # the client dropped the socket, as it should
                await ws.send(json.dumps(_OBSERVATION))
            late.sent.set()
        else:
            await ws.send(json.dumps(_OBSERVATION))


def _reject_upgrade(connection: ServerConnection, request) -> Response | None:
    if request.path.startswith("/noupgrade"):
        return Response(404, "Not Found", Headers([("Content-Length", "0")]), b"")
    return None


@contextlib.asynccontextmanager
async def hostile_ws_server(late: LateAnswer | None = None):
    """Yields ``http://127.0.0.1:PORT``; sessions go to ``{url}/{mode}``."""
    async with serve(lambda ws: _handler(ws, late), "127.0.0.1", 0, process_request=_reject_upgrade, compression=None) as server:
        port = server.sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"


class TaskAPIProxy:
    """An HTTP server forwarding to ``upstream``, with faults switched on per test.

    ``unsupported`` route names (e.g. ``{"task_range"}``) answer 501 like an environment lacking them;
    ``missing`` answers every Task API route 404 "Not Found" like a server without a Task API (openenv-core);
    the first ``stall_first`` requests are never answered (held until the proxy closes, so any client timeout
    expires first, however loaded the machine); ``garbage`` answers 200 with a non-JSON body. ``seen`` records
    every (method, path) received.
    """

    def __init__(
        self,
        upstream: str,
        *,
        unsupported: set[str] = frozenset(),
        missing: bool = False,
        stall_first: int = 0,
        garbage: bool = False,
    ):
        self.upstream = upstream
        self.unsupported = set(unsupported)
        self.missing = missing
        self.stall_first = stall_first
        self._closing = threading.Event()
        self.garbage = garbage
        self.seen: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._http = httpx.Client(base_url=upstream, timeout=10.0)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._make_handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "TaskAPIProxy":
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._http.close()

    def _make_handler(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _answer(self, status: int, body: bytes, content_type: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                with proxy._lock:
                    proxy.seen.append((self.command, self.path))
                    stall = len(proxy.seen) <= proxy.stall_first
                if stall:
                    proxy._closing.wait()
                    self.close_connection = True
                    return None
                route = self.path.rstrip("/").rsplit("/", 1)[-1]
                if proxy.garbage:
                    return self._answer(200, b"<html>proxy error page</html>", "text/html")
                if proxy.missing and self.path != "/schema":
                    return self._answer(404, b'{"detail":"Not Found"}')
                if route in proxy.unsupported:
                    detail = {"detail": f"{route} is not supported for this environment"}
                    return self._answer(501, json.dumps(detail).encode())
                upstream = proxy._http.request(self.command, self.path, content=body, headers={"Content-Type": "application/json"})
                self._answer(upstream.status_code, upstream.content, upstream.headers.get("content-type", "application/json"))

            do_GET = _handle
            do_POST = _handle

        return Handler
