"""`kwargs.cost = "spend"`: rollouts played through the openenv-prime taskset on a server that reports each step's
cost (`metadata["service_spend"]`, tests/support/spend_server.py) carry the episode's spend in
`trace.info["openenv"]`, and the adapter's `observe` hands it to `update` as the group's costs; a group without
spend after groups with it is refused by the sampler, counted and logged in spend terms, and the run goes on."""

from __future__ import annotations

import asyncio

import pytest

from openenv_prime.prime_rl_adapter import SamplerCore
from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer, fixed
from openenv_prime.verifiers_taskset import OpenEnvTaskset, OpenEnvTasksetConfig
from tests.support.spend_tasks import TASKS, episode_spend
from tests.verifiers_taskset.helpers import make_env, run_episodes

GROUP = 2


@pytest.fixture(scope="module")
def model_url():
    with ScriptedOpenAIServer(fixed("ab")) as url:  # an even-length answer: every episode scores 1.0
        yield url


def played_groups(server: str, split: str, model_url: str, indices: list[int]) -> tuple[list, list[list]]:
    """The split's tasks as prime-rl loads them, and one group of GROUP rollouts per task index, played on the server."""
    tasks = list(OpenEnvTaskset(OpenEnvTasksetConfig(id="openenv-prime", base_url=server, splits=[split])))
    chosen = [tasks[i] for i in indices]
    episodes = asyncio.run(run_episodes(make_env(server, splits=[split]), chosen, model_url, rollouts=GROUP))
    for episode in episodes:
        for trace in episode.traces:
            sampled(trace)
    return tasks, [episodes[i * GROUP:(i + 1) * GROUP] for i in range(len(chosen))]


def sampled(trace) -> None:
    """Give the model's replies token ids and a mask, as prime-rl's train client records vLLM's: the scripted model
    returns none, and prime-rl (so the adapter) trains only on traces with sampled tokens."""
    for node in trace.nodes:
        if node.message.role == "assistant":
            node.token_ids, node.mask, node.sampled = [1, 2], [True, True], True


def recording(core: SamplerCore) -> list:
    updates = []
    update = core.inner.update

    def record(task, rewards, costs=None):
        updates.append((task.index, list(rewards), costs))
        return update(task, rewards, costs)

    core.inner.update = record
    return updates


def test_the_spend_each_episode_reported_reaches_update(spend_server, model_url) -> None:
    indices = [0, 5]  # a one-step task, and a two-step one whose spend is the sum of its steps'
    tasks, groups = played_groups(spend_server, "train", model_url, indices)
    for group in groups:
        for episode in group:
            (trace,) = episode.traces
            assert trace.info["openenv"]["service_spend"] == episode_spend(TASKS[trace.task.data.index])
    core = SamplerCore(tasks, cost="spend", sampler_kwargs={"group_size": GROUP})
    updates = recording(core)
    for group in groups:
        core.observe(group)
    assert [(task, costs) for task, _, costs in updates] == [
        (i, [episode_spend(TASKS[i])] * GROUP) for i in indices]
    assert core.metrics()["adapter/rejected_groups"] == 0.0


def test_a_group_without_spend_after_groups_with_it_is_counted_and_told(spend_server, model_url) -> None:
    tasks, groups = played_groups(spend_server, "partial", model_url, [0, 5])  # task 5's family reports no spend
    core = SamplerCore(tasks, cost="spend", sampler_kwargs={"group_size": GROUP})
    warnings: list[str] = []
    core.warn = warnings.append
    updates = recording(core)
    for group in groups:
        core.observe(group)  # never raises
    assert [costs for _, _, costs in updates] == [[episode_spend(TASKS[0])] * GROUP, None]  # the sampler refused None
    metrics = core.metrics()
    assert metrics["adapter/rejected_groups"] == 1.0 and metrics["adapter/updates"] == 1.0
    (told,) = warnings
    assert 'kwargs.cost = "spend"' in told and "metadata['service_spend']" in told
