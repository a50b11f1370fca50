"""Real OpenEnv servers built with openenv's own classes: a grid world (Enum action, shaped rewards, several
steps) and an MCP environment (`MCPEnvironment`, data in metadata, tool results in the observation)."""

from __future__ import annotations

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


def _serve(script: str, version: str, tmp_path_factory):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp(script.split("_")[0]) / "server.log"
    argv = [_python(version), str(HERE / script), str(port), "16"]
    return url, serving(argv, f"{url}/health", log, timeout=120)


@pytest.fixture(scope="module", params=["0.4.1", "0.10.0"])
def grid_any(request, tmp_path_factory):
    """The grid world under each openenv release."""
    url, server = _serve("grid_server.py", request.param, tmp_path_factory)
    with server:
        yield url


@pytest.fixture(scope="module", params=["0.4.1", "0.10.0"])
def mcp_any(request, tmp_path_factory):
    """The MCP environment under each openenv release."""
    url, server = _serve("mcp_server.py", request.param, tmp_path_factory)
    with server:
        yield url


@pytest.fixture(scope="module")
def grid_server(tmp_path_factory):
    url, server = _serve("grid_server.py", "0.4.1", tmp_path_factory)
    with server:
        yield url


@pytest.fixture(scope="module")
def mcp_server(tmp_path_factory):
    url, server = _serve("mcp_server.py", "0.4.1", tmp_path_factory)
    with server:
        yield url
