"""Shared fixtures: real chain_sum OpenEnv servers on 127.0.0.1 (ephemeral ports), one per test session."""

from __future__ import annotations

import os

import pytest

from openenv_prime.envs.launch import local_server

OPENENV010_PYTHON_VAR = "OPENENV_PRIME_OPENENV010_PYTHON"


@pytest.fixture(scope="session")
def chain_sum_server():
    """Base URL (http://127.0.0.1:PORT) of a chain_sum server: 5 lockstep tiers, at most 64 sessions."""
    with local_server("chain-sum", tiers=5, max_sessions=64) as url:
        yield url


@pytest.fixture(scope="session")
def chain_sum_server_openenv010():
    """The same server run by openenv 0.10.0's interpreter (set OPENENV_PRIME_OPENENV010_PYTHON)."""
    python = os.environ.get(OPENENV010_PYTHON_VAR)
    if not python:
        pytest.skip(f"{OPENENV010_PYTHON_VAR} is unset: no openenv 0.10.0 interpreter to serve chain_sum")
    with local_server("chain-sum", tiers=5, max_sessions=64, python=python) as url:
        yield url
