"""The adapter's checkpoint stores only the families that hold something: a family per task costs
nothing until it is drawn, the state continues the exact draws after a load, and checkpoints of the
previous (dense) version still load."""

from __future__ import annotations

import json
import pickle
import random

import pytest

from openenv_prime.prime_rl_adapter import SamplerCore
from openenv_prime.samplers.sparse import expand
from openenv_prime.verifiers_taskset import OpenEnvTask, OpenEnvTaskData
from tests.prime_rl_adapter.vf_groups import family_tasks, scored_group

KWARGS = {"sampler_kwargs": {"group_size": 8, "seed": 1}}


@pytest.fixture(scope="module")
def many_tasks() -> list[OpenEnvTask]:
    """100,000 tasks as the openenv-prime taskset loads them (durable keys), one family each."""
    return [
        OpenEnvTask(OpenEnvTaskData(env_name="chain_sum", split="train", index=i, spec={"tier": i % 5},
                                    id=f"chain_sum/train/t{i % 5}/{i}", name=f"chain_sum/train/t{i % 5}/{i}"))
        for i in range(100_000)
    ]


def run(sampler: SamplerCore, draws: int, rng: random.Random) -> list[str]:
    keys = []
    for _ in range(draws):
        task = next(sampler)
        keys.append(task.key)
        sampler.observe(scored_group(task, [float(rng.random() < 0.4) for _ in range(8)]))
    return keys


@pytest.mark.slow
def test_a_family_per_task_stores_only_drawn_families_and_continues_exactly(many_tasks) -> None:
    sampler = SamplerCore(many_tasks, family_field="", **KWARGS)
    rng = random.Random(0)
    drawn = set(run(sampler, 1000, rng))
    state = sampler.state_dict()
    text = json.dumps(state)
    assert len(text) < 1_000_000  # the dense state was 11.6 MB
    assert set(state["families"]) == drawn  # never-drawn families are not stored
    assert len(state["inner"]["stored_keys"]) == len(drawn)

    resumed = SamplerCore(many_tasks, family_field="", **KWARGS)
    resumed.load_state_dict(json.loads(text))
    assert without_resumes(resumed.state_dict()) == without_resumes(state)
    assert run(resumed, 300, random.Random(5)) == run(sampler, 300, random.Random(5))
    assert without_resumes(resumed.state_dict()) == without_resumes(sampler.state_dict())


def without_resumes(state: dict) -> dict:
    return {**state, "counts": {name: value for name, value in state["counts"].items() if name != "resumes"}}


def dense_version_2(state: dict) -> dict:
    """The checkpoint the previous adapter version wrote: every family, dense."""
    count = state["num_families"]
    families, draws = [None] * count, [0] * count
    for slot, name, drawn in zip(state["inner"]["stored_keys"], state["families"], state["family_draws"]):
        families[slot], draws[slot] = name, drawn
    return {
        "version": 2, "family_field": state["family_field"], "num_tasks": state["num_tasks"], "families": families,
        "family_draws": draws, "inner": expand(state["inner"]), "queue": state["queue"],
        "counts": {name: value for name, value in state["counts"].items() if name != "unscored_groups"},
    }


def test_a_dense_checkpoint_of_the_previous_version_continues_exactly() -> None:
    tasks = family_tasks({"1": 3, "2": 3, "3": 3, "4": 3})
    sampler = SamplerCore(tasks, refill=3, **KWARGS)
    run(sampler, 20, random.Random(2))
    next(sampler)  # leave draws queued
    old = dense_version_2(sampler.state_dict())
    old["families"] = list(sampler.families)  # version 2 named every family
    resumed = SamplerCore(tasks, refill=3, **KWARGS)
    resumed.load_state_dict(pickle.loads(pickle.dumps(old)))
    assert [next(resumed).key for _ in range(30)] == [next(sampler).key for _ in range(30)]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s.update(families=s["families"][:-1]), "families must be a list of 2 entries, one per stored family"),
        (lambda s: s.update(family_draws=[1]), "family_draws must be a list of 2 entries"),
        (lambda s: s.update(num_families=9), "inner state has 4 keys but num_families is 9"),
        (lambda s: s["inner"].update(stored_keys=[3, 0]), "stored_keys must list each key slot once"),
        (lambda s: s["inner"].pop("stored_keys"), "inner must be a sparse inner state"),
    ],
)
def test_a_broken_sparse_checkpoint_is_refused_whole(change, message) -> None:
    tasks = family_tasks({"1": 3, "2": 3, "3": 3, "4": 3})
    sampler = SamplerCore(tasks, **KWARGS)
    for task in (tasks[0], tasks[3]):
        sampler.observe(scored_group(task, [1.0, 0.0] * 4))
    state = json.loads(json.dumps(sampler.state_dict()))
    assert len(state["families"]) == 2
    change(state)
    target = SamplerCore(tasks, **KWARGS)
    before, inner = target.state_dict(), target.inner
    with pytest.raises(ValueError, match=message):
        target.load_state_dict(state)
    assert target.state_dict() == before and target.inner is inner
