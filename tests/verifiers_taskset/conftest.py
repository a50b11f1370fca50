from __future__ import annotations

import pytest

from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer, chain_sum_rule

CORRECT_TIERS = {0, 1, 2}


@pytest.fixture(scope="module")
def scripted_model():
    """A model that answers chain_sum tiers 0-2 exactly and tiers 3-4 off by one."""
    server = ScriptedOpenAIServer(chain_sum_rule(CORRECT_TIERS))
    with server as base_url:
        server.url = base_url
        yield server


@pytest.fixture(scope="module")
def chain_sum_tasks(chain_sum_server):
    from openenv_prime.verifiers_taskset import OpenEnvTaskset, OpenEnvTasksetConfig

    config = OpenEnvTasksetConfig(id="openenv-prime", base_url=chain_sum_server, splits=["test"])
    return list(OpenEnvTaskset(config))
