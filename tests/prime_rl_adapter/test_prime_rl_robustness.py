"""No group can take the orchestrator down: bad rewards, empty groups, foreign tasks, a wrong group
size and groups that never come back are counted in `adapter/*`, logged once, and skipped.
Also: bounded metrics for a family per task, and distinct draws per worker."""

from __future__ import annotations

import math

import pytest
import verifiers.v1 as vf
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.prime_rl_adapter import SamplerCore
from openenv_prime.prime_rl_adapter.families import sampler_tasks
from openenv_prime.prime_rl_adapter.workers import WORKER_INDEX_VAR
from openenv_prime.samplers import make_sampler
from tests.prime_rl_adapter.vf_groups import family_tasks, group, scored_group, trace

FAMILIES = {"1": 4, "2": 4, "3": 4}


def recording(sampler: SamplerCore) -> list[str]:
    messages: list[str] = []
    sampler.warn = messages.append
    return messages


def rewardless(task: vf.Task) -> vf.Trace:
    t = trace(task, 0.0)
    return t.model_copy(update={"rewards": {}})


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_reward_is_left_out_and_the_rest_of_the_group_is_used(bad: float) -> None:
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks, cost="total_tokens", sampler_kwargs={"group_size": 3})
    messages = recording(sampler)
    expected = make_sampler("curriculum", sampler_tasks(tasks, "family"), group_size=3)
    sampler.observe(scored_group(tasks[0], [1.0, bad, 0.0]))
    sampler.observe(scored_group(tasks[1], [bad, bad, bad]))
    expected.update(expected.pool.tasks[0], [1.0, 0.0], [22.5, 22.5])  # the bad trace's 15 tokens shared by the others
    assert sampler.inner.state_dict() == expected.state_dict()
    metrics = sampler.metrics()
    assert metrics["adapter/nonfinite_rewards"] == 4.0
    assert metrics["adapter/updates"] == 1.0
    assert metrics["adapter/unscored_groups"] == 1.0  # the all-bad group: episodes, no usable reward
    assert metrics["adapter/empty_groups"] == 0.0
    assert len(messages) == 1 and "NaN or infinite reward" in messages[0]


def test_a_non_finite_reward_is_counted_even_on_a_trace_without_sampled_tokens() -> None:
    """A broken reward function shows in the metrics whatever else the trace lacks."""
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks, sampler_kwargs={"group_size": 2})
    sampler.warn = lambda message: None
    task = tasks[0]
    sampler.observe(group(task, [trace(task, math.nan, sampled=False), trace(task, math.inf, sampled=False)]))
    metrics = sampler.metrics()
    assert metrics["adapter/nonfinite_rewards"] == 2.0
    assert metrics["adapter/unsampled_traces"] == 0.0
    assert metrics["adapter/unscored_groups"] == 1.0


def test_a_trace_without_rewards_is_missing_not_zero() -> None:
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks, cost="total_tokens", sampler_kwargs={"group_size": 2})
    messages = recording(sampler)
    expected = make_sampler("curriculum", sampler_tasks(tasks, "family"), group_size=2)
    task = tasks[4]
    sampler.observe(group(task, [trace(task, 1.0), rewardless(task)]))
    expected.update(expected.pool.tasks[4], [1.0], [30.0])
    assert sampler.inner.state_dict() == expected.state_dict()
    assert sampler.metrics()["adapter/missing_rewards"] == 1.0
    assert any("without any reward" in message for message in messages)


def test_traces_without_sampled_tokens_are_not_read_as_prime_rl_skips_them() -> None:
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks, cost="total_tokens", sampler_kwargs={"group_size": 2})
    expected = make_sampler("curriculum", sampler_tasks(tasks, "family"), group_size=2)
    task = tasks[8]
    sampler.observe(group(task, [trace(task, 1.0), trace(task, 0.0, sampled=False, output_tokens=0)]))
    expected.update(expected.pool.tasks[8], [1.0], [25.0])
    assert sampler.inner.state_dict() == expected.state_dict()
    assert sampler.metrics()["adapter/unsampled_traces"] == 1.0


def test_empty_and_foreign_groups_are_counted_and_skipped_with_one_log_each() -> None:
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks)
    messages = recording(sampler)
    before = sampler.inner.state_dict()
    stranger = family_tasks({"9": 1})[0]
    for _ in range(3):
        sampler.observe([])
        sampler.observe(scored_group(stranger, [1.0, 0.0]))
    assert sampler.inner.state_dict() == before
    metrics = sampler.metrics()
    assert metrics["adapter/empty_groups"] == 3.0
    assert metrics["adapter/unknown_task_groups"] == 3.0
    assert len(messages) == 2
    assert "empty group" in messages[0] and "not in this sampler's taskset" in messages[1]


def test_a_group_size_mismatch_is_reported_at_the_first_group() -> None:
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks, sampler_kwargs={"group_size": 8})
    messages = recording(sampler)
    for _ in range(3):
        sampler.observe(scored_group(tasks[0], [1.0, 0.0, 1.0, 0.0]))
    assert sampler.metrics()["adapter/group_size_mismatches"] == 3.0
    assert sampler.metrics()["adapter/updates"] == 3.0  # the rewards are still used
    assert len(messages) == 1
    assert "the first group has 4 episodes" in messages[0] and "group_size = 8" in messages[0]


def test_matching_group_sizes_log_nothing() -> None:
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks, sampler_kwargs={"group_size": 2})
    messages = recording(sampler)
    sampler.observe(scored_group(tasks[0], [1.0, 0.0]))
    assert messages == [] and sampler.metrics()["adapter/group_size_mismatches"] == 0.0


def test_an_update_the_inner_sampler_rejects_is_counted_not_raised() -> None:
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks)
    messages = recording(sampler)

    def refuse(key, rewards, costs=None):
        raise ValueError("costs[0] is -1.0; costs must be >= 0")

    sampler.inner.update = refuse
    sampler.observe(scored_group(tasks[0], [1.0, 0.0]))
    assert sampler.metrics()["adapter/rejected_groups"] == 1.0
    assert any("rejected a group of family '1'" in message for message in messages)


def test_groups_that_never_come_back_stop_counting_as_pending() -> None:
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks, pending_horizon=16, sampler_kwargs={"group_size": 2})
    drawn = [next(sampler) for _ in range(100)]  # prime-rl drops most of them as stale
    for task in drawn[-5:]:
        sampler.observe(scored_group(task, [1.0, 0.0]))
    metrics = sampler.metrics()
    assert metrics["adapter/pending_groups"] == 11.0
    assert metrics["adapter/lost_groups"] == 84.0
    assert metrics["adapter/updates"] == 5.0


@settings(max_examples=40, deadline=None)
@given(
    horizon=st.integers(1, 20),
    events=st.lists(st.tuples(st.booleans(), st.integers(0, 11)), max_size=120),
)
def test_pending_groups_stay_bounded_and_accounted(horizon: int, events) -> None:
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks, pending_horizon=horizon, sampler="uniform")
    for draw, index in events:
        if draw:
            next(sampler)
        else:
            sampler.observe(scored_group(tasks[index], [1.0, 0.0]))
    pending = sampler.pending
    drawn = sum(1 for draw, _ in events if draw)
    assert pending.draws == drawn
    assert 0 <= pending.outstanding <= min(horizon, drawn)
    assert pending.outstanding + pending.lost <= drawn
    assert len(pending.order) <= horizon
    assert sum(len(queue) for queue in pending.by_key.values()) == pending.outstanding


finite = st.floats(0.0, 1.0)
any_reward = finite | st.sampled_from([math.nan, math.inf, -math.inf, None])


@settings(max_examples=60, deadline=None)
@given(
    groups=st.lists(
        st.tuples(
            st.integers(0, 12),  # task index; 12 is a task of another taskset
            st.lists(st.tuples(any_reward, st.booleans(), st.booleans(), st.booleans()), max_size=6),
        ),
        max_size=8,
    )
)
def test_observe_never_raises_and_accounts_for_every_group(groups) -> None:
    tasks = family_tasks(FAMILIES)
    stranger = family_tasks({"9": 1})[0]
    sampler = SamplerCore(tasks, sampler_kwargs={"group_size": 4})
    sampler.warn = lambda message: None
    for index, rollouts in groups:
        task = tasks[index] if index < len(tasks) else stranger
        traces = []
        for reward, ok, trainable, sampled in rollouts:
            t = trace(task, 0.0 if reward is None else reward, ok=ok, trainable=trainable, sampled=sampled)
            traces.append(t.model_copy(update={"rewards": {}}) if reward is None else t)
        sampler.observe(group(task, traces))
    counts = sampler.counts
    assert counts["empty_groups"] == counts_of_empty_lists(groups)
    assert counts["unknown_task_groups"] == sum(1 for index, rollouts in groups if rollouts and index >= len(tasks))
    assert counts["observed_groups"] + counts["unknown_task_groups"] + counts["empty_groups"] == len(groups)
    assert counts["updates"] + counts["errored_groups"] + counts["unscored_groups"] == counts["observed_groups"]
    bad = [reward for index, rollouts in groups if index < len(tasks) for reward, ok, trainable, _ in rollouts
           if ok and trainable and reward is not None and not math.isfinite(reward)]
    assert counts["nonfinite_rewards"] == len(bad)
    assert all(math.isfinite(value) for value in sampler.metrics().values())


def counts_of_empty_lists(groups) -> int:
    return sum(1 for _, rollouts in groups if not rollouts)


def test_a_family_per_task_logs_totals_and_the_top_families_only() -> None:
    tasks = family_tasks({"1": 300, "2": 300})
    sampler = SamplerCore(tasks, family_field="", sampler_kwargs={"group_size": 2}, metrics_families=5)
    for _ in range(200):
        task = next(sampler)
        sampler.observe(scored_group(task, [1.0, 0.0]))
    metrics = sampler.metrics()
    per_family = [name for name in metrics if name.startswith("key/")]
    assert len(per_family) == 5 * 2  # draw_share and p of the 5 most drawn
    top = max(range(len(sampler.families)), key=sampler.family_draws.__getitem__)
    assert f"key/{sampler.families[top]}/draw_share" in metrics
    assert len(metrics) < 60
    everything = SamplerCore(tasks, family_field="", metrics_families="all").metrics()
    assert sum(name.startswith("key/") for name in everything) >= 600
    assert not any(name.startswith("key/") for name in SamplerCore(tasks, metrics_families=0).metrics())


def draws(sampler: SamplerCore, n: int = 40) -> list[str]:
    return [next(sampler).key for _ in range(n)]


def test_workers_sharing_a_config_draw_differently(monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = family_tasks({"1": 20, "2": 20})
    kwargs = {"sampler": "uniform", "sampler_kwargs": {"seed": 0}}
    monkeypatch.delenv(WORKER_INDEX_VAR, raising=False)
    plain = draws(SamplerCore(tasks, **kwargs))
    assert draws(SamplerCore(tasks, worker_index=0, **kwargs)) == plain
    one = draws(SamplerCore(tasks, worker_index=1, **kwargs))
    two = draws(SamplerCore(tasks, worker_index=2, **kwargs))
    assert len({tuple(plain), tuple(one), tuple(two)}) == 3
    monkeypatch.setenv(WORKER_INDEX_VAR, "1")
    assert draws(SamplerCore(tasks, **kwargs)) == one
    monkeypatch.setenv(WORKER_INDEX_VAR, "first")
    with pytest.raises(ValueError, match=WORKER_INDEX_VAR):
        SamplerCore(tasks, **kwargs)
