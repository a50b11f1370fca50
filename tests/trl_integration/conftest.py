"""TRL fixtures: the tests' OpenEnv servers (the tiny model and the run settings are in tiny.py). TRL, transformers
and torch are real; the model is tiny."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

pytest.importorskip("trl", reason="TRL is not installed (the `trl` extra)")

TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def gold_fields_server(tmp_path_factory):
    """tests/play/gold_server.py's `fields` environment: the gold answer in every observation shape we know."""
    from tests.play.gold_server import gold_serving

    with gold_serving("fields", tmp_path_factory.mktemp("gold")) as url:
        yield url


def _play_server(tmp_path_factory, script: str, *args: str):
    """One of tests/play's servers on a free port, 16 sessions, until the test module is done."""
    from tests.support.processes import free_port, serving

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with serving([sys.executable, str(TESTS / "play" / script), str(port), "16", *args], f"{url}/health",
                 tmp_path_factory.mktemp(script.removesuffix(".py")) / "server.log"):
        yield url


@pytest.fixture(scope="module")
def grid_world_server(tmp_path_factory):
    """tests/play/grid_server.py: an Enum action (UP/DOWN/LEFT/RIGHT), several steps per episode."""
    yield from _play_server(tmp_path_factory, "grid_server.py")


@pytest.fixture(scope="module")
def coding_server(tmp_path_factory):
    """tests/play/coding_server.py: coding_env's free-text `code` action; a failing program returns its traceback."""
    yield from _play_server(tmp_path_factory, "coding_server.py")


@pytest.fixture(scope="module")
def instructed_server(tmp_path_factory):
    """tests/play/instructed_server.py: its own system prompt (an observation field) asks for <answer> tags."""
    yield from _play_server(tmp_path_factory, "instructed_server.py", "field")


@pytest.fixture(scope="module")
def echo_tools_server(tmp_path_factory):
    """tests/play/mcp_tool_envs.py's `echo`: an MCP environment shaped like echo_env (one tool, echo_message)."""
    yield from _play_server(tmp_path_factory, "mcp_tool_envs.py", "echo")


@pytest.fixture(scope="module")
def calendar_tools_server(tmp_path_factory):
    """tests/play/mcp_tool_envs.py's `calendar`: 37 MCP tools with required arguments and page-long descriptions."""
    yield from _play_server(tmp_path_factory, "mcp_tool_envs.py", "calendar")
