"""Resume that survives change: a checkpoint restores per-family statistics by family name when
the task pool grew or shrank, keeps them when settings changed (saying what changed), and is
checked whole before anything is applied."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.prime_rl_adapter import SamplerCore
from tests.prime_rl_adapter.vf_groups import family_tasks, scored_group

KWARGS = {"sampler_kwargs": {"group_size": 4, "gamma": 0.9, "epsilon": 0.02, "seed": 5}}


def train(sampler: SamplerCore, steps: int) -> None:
    for _ in range(steps):
        task = next(sampler)
        tier = int(task.data.family)
        rewards = [1.0] * 4 if tier == 1 else [0.0] * 4 if tier >= 4 else [1.0, 0.0, 0.0, 1.0]
        sampler.observe(scored_group(task, rewards))


def learned(sampler: SamplerCore) -> dict[str, tuple]:
    """Per family: its update count, evidence and draws, as the inner sampler holds them."""
    state = sampler.inner.state_dict()
    columns = [state["curriculum"][name] for name in ("updates", "successes", "failures")]
    columns.append(state["stats"]["draws"])
    return {family: tuple(column[slot] for column in columns) for slot, family in enumerate(sampler.inner.pool.keys)}


def saved(sampler: SamplerCore) -> dict:
    return pickle.loads(pickle.dumps(sampler.state_dict()))


def recording(sampler: SamplerCore) -> list[str]:
    messages: list[str] = []
    sampler.warn = messages.append
    return messages


def test_a_grown_pool_keeps_each_familys_statistics_and_new_families_start_from_the_prior() -> None:
    old_tasks = family_tasks({"1": 4, "2": 4, "3": 4, "4": 4})
    sampler = SamplerCore(old_tasks, **KWARGS)
    train(sampler, 60)
    before = learned(sampler)
    state = saved(sampler)

    # Between runs: family "4" removed, "2" and "3" grew, family "5" is new (keys are content hashes).
    new_tasks = family_tasks({"1": 4, "2": 6, "3": 5, "5": 3})
    resumed = SamplerCore(new_tasks, **KWARGS)
    messages = recording(resumed)
    resumed.load_state_dict(state)
    after = learned(resumed)
    for family in ("1", "2", "3"):
        assert after[family] == before[family]
    assert after["5"] == (0, 0.0, 0.0, 0)
    assert resumed.inner.success_rate("5") == 0.5
    assert resumed.inner.success_rate("1") == sampler.inner.success_rate("1") > 0.9
    metrics = resumed.metrics()
    assert metrics["adapter/resume_new_families"] == 1.0
    assert metrics["adapter/resume_dropped_families"] == 1.0
    assert metrics["adapter/resumes"] == 1.0
    assert metrics["adapter/updates"] == 60.0
    (message,) = messages
    assert "1 new family start from the prior: '5'" in message
    assert "1 vanished family dropped: '4'" in message
    assert "16 -> 18 tasks" in message
    train(resumed, 20)  # and it keeps going on the new pool
    assert resumed.metrics()["adapter/updates"] == 80.0


def test_queued_draws_of_removed_tasks_are_dropped_and_counted() -> None:
    tasks = family_tasks({"1": 4, "2": 4})
    sampler = SamplerCore(tasks, refill=8, **KWARGS)
    next(sampler)
    state = saved(sampler)
    assert len(state["queue"]) == 7
    kept = [task for task in tasks if task.data.family == "1"]
    resumed = SamplerCore(kept, refill=8, **KWARGS)
    resumed.load_state_dict(state)
    queued_family_1 = sum(1 for key in state["queue"] if key in {task.key for task in kept})
    assert len(resumed.queue) == queued_family_1
    assert resumed.metrics()["adapter/resume_dropped_queue"] == 7 - queued_family_1


def test_changed_settings_keep_the_statistics_and_say_what_changed() -> None:
    tasks = family_tasks({"1": 4, "2": 4, "3": 4})
    sampler = SamplerCore(tasks, **KWARGS)
    train(sampler, 30)
    before = learned(sampler)
    state = saved(sampler)
    resumed = SamplerCore(tasks, sampler_kwargs={"group_size": 4, "gamma": 0.8, "epsilon": 0.05, "seed": 5})
    messages = recording(resumed)
    resumed.load_state_dict(state)
    assert learned(resumed) == before
    assert resumed.inner.gamma == 0.8 and resumed.inner.epsilon == 0.05
    (message,) = messages
    assert "settings changed, statistics kept: epsilon 0.02 -> 0.05, gamma 0.9 -> 0.8" in message


def test_an_unchanged_resume_logs_nothing_and_continues_exactly() -> None:
    tasks = family_tasks({"1": 4, "2": 4, "3": 4})
    sampler = SamplerCore(tasks, **KWARGS)
    train(sampler, 10)
    state = saved(sampler)
    resumed = SamplerCore(tasks, **KWARGS)
    messages = recording(resumed)
    resumed.load_state_dict(state)
    assert messages == []
    assert [next(resumed).key for _ in range(20)] == [next(sampler).key for _ in range(20)]


def test_a_switched_sampler_keeps_the_draw_counts_and_starts_learning_afresh() -> None:
    tasks = family_tasks({"1": 4, "2": 4})
    uniform = SamplerCore(tasks, sampler="uniform")
    train(uniform, 10)
    resumed = SamplerCore(tasks, **KWARGS)
    messages = recording(resumed)
    resumed.load_state_dict(saved(uniform))
    assert resumed.inner.state_dict()["stats"]["draws"] == uniform.inner.state_dict()["stats"]["draws"]
    assert resumed.inner.success_rate("1") == 0.5
    assert "sampler 'UniformSampler' -> 'CurriculumSampler'" in messages[0]


def test_inconsistent_checkpoints_are_refused_whole() -> None:
    tasks = family_tasks({"1": 4, "2": 4})
    sampler = SamplerCore(tasks, refill=3, **KWARGS)
    train(sampler, 5)
    next(sampler)
    state = saved(sampler)
    target = SamplerCore(tasks, refill=3, **KWARGS)
    train(target, 3)
    before, inner = target.state_dict(), target.inner
    stranger = family_tasks({"9": 1})[0].key
    bad = [
        ({**state, "num_tasks": 9}, "num_tasks = 9"),
        ({**state, "queue": [*state["queue"], stranger]}, "queue holds 1 keys of tasks this taskset lacks"),
        ({**state, "queue": [1]}, "queue must be a list of task keys"),
        ({**state, "families": ["1", "1"]}, "families holds a name twice"),
        ({**state, "counts": {**state["counts"], "updates": float("nan")}}, "counts\\['updates'\\]"),
        ({**state, "inner": {**state["inner"], "pool": "x"}}, "inner must be"),
        ([], "expected the dict"),
    ]
    for broken, message in bad:
        with pytest.raises(ValueError, match=message):
            target.load_state_dict(broken)
    broken_inner = pickle.loads(pickle.dumps(state))
    broken_inner["inner"]["curriculum"]["successes"][0] = "many"
    with pytest.raises(ValueError):
        target.load_state_dict(broken_inner)
    assert target.state_dict() == before and target.inner is inner


family_sizes = st.dictionaries(st.sampled_from(["1", "2", "3", "4", "5", "6"]), st.integers(1, 4), min_size=1)


@settings(max_examples=30, deadline=None)
@given(old=family_sizes, new=family_sizes, steps=st.integers(0, 25))
def test_any_pool_change_carries_exactly_the_surviving_families(old, new, steps) -> None:
    sampler = SamplerCore(family_tasks(old), **KWARGS)
    train(sampler, steps)
    before = learned(sampler)
    resumed = SamplerCore(family_tasks(new), **KWARGS)
    resumed.warn = lambda message: None
    resumed.load_state_dict(saved(sampler))
    after = learned(resumed)
    for family in new:
        assert after[family] == (before[family] if family in old else (0, 0.0, 0.0, 0))
    metrics = resumed.metrics()
    # The checkpoint stores only families that hold something: the others start from the prior, as new ones do.
    changed = [family for family in new if family not in old or before[family] == (0, 0.0, 0.0, 0)]
    assert metrics["adapter/resume_new_families"] == (len(changed) if resumed.inner.pool.fingerprint != sampler.inner.pool.fingerprint else 0)


def first_version(sampler: SamplerCore) -> dict:
    """The checkpoint the first adapter version wrote: no family names, a version 1 inner state
    (shuffle orders in full, the RNG as a list)."""
    import random

    state = saved(sampler)
    inner = state["inner"]
    version, internal, gauss = random.Random(3).getstate()
    orders = [list(members) for members in sampler.inner.pool.members]
    inner = dict(inner, version=1, rng=[version, list(internal), gauss],
                 cycles={"orders": orders, "positions": [0] * len(orders)})
    inner.pop("lineage", None)
    old_counters = ("sampled", "observed_groups", "updates", "errored_groups", "empty_groups", "errored_rollouts", "lost_tokens")
    return {
        "version": 1, "family_field": "family", "num_tasks": state["num_tasks"], "inner": inner,
        "queue": state["queue"], "counts": {name: state["counts"][name] for name in old_counters},
    }


def test_a_first_version_checkpoint_resumes_on_the_same_pool_and_is_refused_on_another() -> None:
    tasks = family_tasks({"1": 4, "2": 4, "3": 4})
    sampler = SamplerCore(tasks, **KWARGS)
    train(sampler, 20)
    old = first_version(sampler)
    resumed = SamplerCore(tasks, **KWARGS)
    resumed.load_state_dict(old)
    assert learned(resumed) == learned(sampler)
    assert resumed.metrics()["adapter/updates"] == 20.0
    grown = SamplerCore(family_tasks({"1": 4, "2": 4, "3": 4, "4": 1}), **KWARGS)
    with pytest.raises(ValueError, match="skip_progress"):
        grown.load_state_dict(old)
