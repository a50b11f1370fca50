"""The chain_sum server with a short WebSocket keepalive: it closes a socket whose client has not answered
its ping within about a second (uvicorn's default is ~40 s). Run as ``python short_keepalive_server.py PORT``.

A test of what happens when a policy blocks the event loop past the keepalive then needs a few seconds,
not 45, and the server's close is certain rather than a race against uvicorn's timer."""

from __future__ import annotations

import sys

import uvicorn

from openenv_prime.envs.reasoning_gym_tiers.app import build_app
from openenv_prime.envs.reasoning_gym_tiers.environment import ChainSumEnvironment

KEEPALIVE_S = 0.5  # ping every 0.5 s, close when the pong is 0.5 s late

if __name__ == "__main__":
    uvicorn.run(build_app(ChainSumEnvironment, 5), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning",
                ws_ping_interval=KEEPALIVE_S, ws_ping_timeout=KEEPALIVE_S)
