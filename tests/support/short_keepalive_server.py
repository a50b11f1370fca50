"""The chain_sum server with a short WebSocket keepalive: it closes a socket whose client has not answered
its ping within about a second (uvicorn's default is ~40 s). Run as ``python short_keepalive_server.py PORT``.

A test of what happens when a policy blocks the event loop past the keepalive then needs a few seconds,
not 45. ``GET /closed_sockets`` answers how many WebSocket connections the server has ended, so a test blocks
until the server did close them (the cause) rather than for a time it hopes is long enough."""

from __future__ import annotations

import sys

import uvicorn

from openenv_prime.envs.reasoning_gym_tiers.app import build_app
from openenv_prime.envs.reasoning_gym_tiers.environment import ChainSumEnvironment

KEEPALIVE_S = 0.5  # ping every 0.5 s, close when the pong is 0.5 s late


class CountClosedSockets:
    """ASGI wrapper: counts the WebSocket connections whose handler has returned (the server closed them)."""

    def __init__(self, app):
        self.app = app
        self.closed = 0

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/closed_sockets":
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": str(self.closed).encode()})
            return
        try:
            await self.app(scope, receive, send)
        finally:
            if scope["type"] == "websocket":
                self.closed += 1


if __name__ == "__main__":
    uvicorn.run(CountClosedSockets(build_app(ChainSumEnvironment, 5)), host="127.0.0.1", port=int(sys.argv[1]),
                log_level="warning", ws_ping_interval=KEEPALIVE_S, ws_ping_timeout=KEEPALIVE_S)
