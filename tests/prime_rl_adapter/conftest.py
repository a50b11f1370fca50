"""A chain_sum server for the adapter tests. prime-rl's environment (patches/check) may lack
openenv, so OPENENV_PRIME_SERVER_PYTHON can name an interpreter that has it; otherwise the
suite's shared server is reused."""

from __future__ import annotations

import os

import pytest

from openenv_prime.envs.launch import local_server

SERVER_PYTHON_VAR = "OPENENV_PRIME_SERVER_PYTHON"


@pytest.fixture(scope="session")
def server_url(request: pytest.FixtureRequest):
    python = os.environ.get(SERVER_PYTHON_VAR)
    if not python:
        yield request.getfixturevalue("chain_sum_server")
        return
    with local_server("chain-sum", tiers=5, max_sessions=8, python=python) as url:
        yield url
