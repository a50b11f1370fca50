"""Fixtures of the client tests: the chain_sum server of each openenv version, and a server capped at 2 sessions."""

from __future__ import annotations

import pytest

from openenv_prime.envs.launch import local_server
from tests.support.processes import server_python


@pytest.fixture(scope="module", params=["openenv-0.4.1", "openenv-0.10.0"])
def any_server(request):
    """The shared chain_sum server, once from this venv's openenv 0.4.1 and once from openenv 0.10.0."""
    name = "chain_sum_server" if request.param == "openenv-0.4.1" else "chain_sum_server_openenv010"
    return request.getfixturevalue(name)


@pytest.fixture(scope="module")
def capped_server():
    """A chain_sum server that allows only 2 concurrent /ws sessions."""
    with local_server("chain-sum", tiers=5, max_sessions=2, python=server_python()) as url:
        yield url
