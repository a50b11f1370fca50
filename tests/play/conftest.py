"""Real OpenEnv servers built with openenv's own classes: a grid world (Enum action, shaped rewards, several
steps) and an MCP environment (`MCPEnvironment`, data in metadata, tool results in the observation)."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import pytest

from tests.support.processes import free_port, serving

HERE = Path(__file__).parent
OPENENV010 = "OPENENV_PRIME_OPENENV010_PYTHON"


def _python(version: str) -> str:
    if version == "0.4.1":
        return sys.executable
    python = os.environ.get(OPENENV010)
    if not python:
        pytest.skip(f"{OPENENV010} is unset: no openenv 0.10.0 interpreter")
    return python


def _serve(script: str, version: str, tmp_path_factory, *args: str):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp(script.split("_")[0]) / "server.log"
    argv = [_python(version), str(HERE / script), str(port), "16", *args]
    return url, serving(argv, f"{url}/health", log)


@pytest.fixture(scope="session")
def play_servers(tmp_path_factory):
    """Starts each (server, openenv release) once per test session, on first use; stops them all at the end."""
    with contextlib.ExitStack() as stack:
        started: dict[tuple, str] = {}

        def get(script: str, version: str, *args: str) -> str:
            """The URL of ``script`` (run with ``args`` after its port and session limit) under openenv ``version``."""
            if (script, version, args) not in started:
                url, server = _serve(script, version, tmp_path_factory, *args)
                stack.enter_context(server)
                started[script, version, args] = url
            return started[script, version, args]

        yield get


@pytest.fixture(params=["0.4.1", "0.10.0"])
def grid_any(request, play_servers):
    """The grid world under each openenv release."""
    return play_servers("grid_server.py", request.param)


@pytest.fixture(params=["0.4.1", "0.10.0"])
def mcp_any(request, play_servers):
    """The MCP environment under each openenv release."""
    return play_servers("mcp_server.py", request.param)


@pytest.fixture
def grid_server(play_servers):
    return play_servers("grid_server.py", "0.4.1")


@pytest.fixture
def mcp_server(play_servers):
    return play_servers("mcp_server.py", "0.4.1")
