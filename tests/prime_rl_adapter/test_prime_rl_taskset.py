"""The adapter's defaults over the real openenv-prime taskset, loaded from a real chain_sum server
the way prime-rl's orchestrator loads it (`list(taskset)`): families are the tiers, draws are the
taskset's own task objects, and scored groups move the tier's estimate."""

from __future__ import annotations

from openenv_prime.prime_rl_adapter import SamplerCore
from openenv_prime.verifiers_taskset import OpenEnvTasksetConfig, OpenEnvTaskset
from tests.prime_rl_adapter.vf_groups import scored_group


def test_default_kwargs_serve_the_tasksets_tasks_by_tier(server_url: str) -> None:
    tasks = list(OpenEnvTaskset(OpenEnvTasksetConfig(id="openenv-prime", base_url=server_url, splits=["train"])))
    sampler = SamplerCore(tasks, sampler_kwargs={"group_size": 4, "seed": 0})
    assert sampler.family_by_key == {task.key: str(task.data.spec["tier"]) for task in tasks}
    assert set(sampler.family_by_key.values()) == {"0", "1", "2", "3", "4"}

    ids = {id(task) for task in tasks}
    for _ in range(50):
        task = next(sampler)
        assert id(task) in ids
        solved = task.data.family == "0"
        sampler.observe(scored_group(task, [1.0] * 4 if solved else [1.0, 0.0, 0.0, 1.0]))
    metrics = sampler.metrics()
    assert metrics["adapter/updates"] == 50.0
    # Tier 0 only ever gives all-success groups, so its estimate climbs above the others'.
    assert metrics["key/0/draw_share"] > 0
    assert metrics["key/0/p"] > metrics["key/1/p"]
