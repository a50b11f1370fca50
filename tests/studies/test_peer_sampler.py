"""studies/worlds/peer_sampler.py: the simulator's 2025 peers behind the package's sampler interface, as the
real-run comparison (studies/mlx_runs/compare.py) trains with them. A checkpointed state must continue the exact
draws, a bad state must be refused without a trace, and the draws must be the simulator's own rule's."""

from __future__ import annotations

import importlib
import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.samplers import Task, TaskSampler

@pytest.fixture(scope="module")
def peers():
    return importlib.import_module("studies.worlds.peer_sampler")


TASKS = [Task("train", i, f"f{i // 10}") for i in range(60)]  # 6 families of 10
RATES = {"f0": 0.0, "f1": 0.0, "f2": 0.5, "f3": 1.0, "f4": 0.3, "f5": 0.05}


def play(sampler, steps: int, rng: random.Random) -> list[int]:
    drawn = []
    for _ in range(steps):
        for task in sampler.sample(4):
            drawn.append(task.index)
            sampler.update(task, [float(rng.random() < RATES[task.key]) for _ in range(8)], [3.0] * 8)
    return drawn


@settings(max_examples=12, deadline=None)
@given(name=st.sampled_from(["greso", "bots", "mopps", "sec"]), before=st.integers(0, 6), seed=st.integers(0, 99))
def test_a_saved_state_continues_the_same_draws(peers, name, before, seed):
    a = peers.make_peer_sampler(name, TASKS, seed=seed, group_size=8)
    play(a, before, random.Random(seed))
    state = json.loads(json.dumps(a.state_dict()))  # what a checkpoint holds
    b = peers.make_peer_sampler(name, TASKS, seed=seed, group_size=8)
    b.load_state_dict(state)
    assert play(a, 5, random.Random(1)) == play(b, 5, random.Random(1))
    assert a.metrics() == b.metrics()


def test_it_is_a_task_sampler_that_draws_what_the_simulator_rule_draws(peers):
    from studies.worlds.peers import FAMILIES
    from studies.worlds.peers2025 import GRESO
    from studies.worlds.worlds import Layout

    sampler = peers.make_peer_sampler("greso", TASKS, seed=4, group_size=8)
    assert isinstance(sampler, TaskSampler)
    layout = Layout(family_of=tuple(i // 10 for i in range(60)), members=tuple(tuple(range(f * 10, f * 10 + 10)) for f in range(6)))
    rule = GRESO(layout, 8, 4, level=FAMILIES)
    rng_a, rng_b = random.Random(0), random.Random(0)
    for _ in range(12):
        ours, theirs = sampler.sample(4), rule.sample(4)
        assert [t.index for t in ours] == theirs
        for task in ours:
            rewards = [float(rng_a.random() < RATES[task.key]) for _ in range(8)]
            sampler.update(task, rewards)
            rule.update(task.index, [float(rng_b.random() < RATES[task.key]) for _ in range(8)])
    assert sampler.metrics()["draws"] == 48 and sampler.metrics()["groups"] == 48
    # families that never succeed are skipped more and more: GRESO's rule at work
    shares = sampler.key_metrics()
    assert shares["f0"]["draw_share"] + shares["f1"]["draw_share"] < 2 / 6


def test_a_bad_state_is_refused_and_changes_nothing(peers):
    sampler = peers.make_peer_sampler("greso", TASKS, seed=1, group_size=8)
    play(sampler, 3, random.Random(0))
    before = sampler.state_dict()
    for field, value, words in [("p_easy", "high", "peer.p_easy"), ("easy_run", [0] * 5, "peer.easy_run"),
                                ("order", {"epoch": {"n": 60, "order": [0] * 60, "at": 0}}, "peer.order")]:
        state = json.loads(json.dumps(before))
        state["peer"][field] = value
        with pytest.raises(ValueError, match=words):
            sampler.load_state_dict(state)
        assert sampler.state_dict() == before
    other = peers.make_peer_sampler("sec", TASKS, seed=1, group_size=8).state_dict()
    with pytest.raises(ValueError, match="config"):
        sampler.load_state_dict(other)
    with pytest.raises(ValueError, match="unknown peer 'speed'"):
        peers.make_peer_sampler("speed", TASKS, seed=0, group_size=8)
