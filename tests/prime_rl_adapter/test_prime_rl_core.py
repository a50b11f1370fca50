"""The adapter against real verifiers 0.4.0 objects, without prime-rl: returned tasks, families,
what reaches `update`, errored and partial groups, checkpoints, metrics and bad kwargs."""

from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import verifiers.v1 as vf

from openenv_prime.prime_rl_adapter import SamplerCore, read_group
from openenv_prime.prime_rl_adapter.families import sampler_tasks
from openenv_prime.samplers import make_sampler
from tests.prime_rl_adapter.vf_groups import (
    failed_episode,
    family_tasks,
    group,
    plain_tasks,
    scored_group,
    trace,
)

FAMILIES = {"1": 4, "2": 4, "3": 4}


def twin(tasks: list[vf.Task], family_field: str | None = "family", **sampler_kwargs):
    """The inner sampler built independently, to drive with the updates we expect."""
    return make_sampler("curriculum", sampler_tasks(tasks, family_field), **sampler_kwargs)


def test_next_returns_the_tasksets_own_task_objects() -> None:
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks, sampler="curriculum", sampler_kwargs={"group_size": 4, "seed": 3})
    ids = {id(task) for task in tasks}
    drawn = [next(sampler) for _ in range(300)]
    assert all(id(task) in ids for task in drawn)
    assert {task.data.family for task in drawn} == set(FAMILIES)


def test_sequential_inner_sampler_serves_the_taskset_in_order() -> None:
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks, sampler="sequential")
    assert [next(sampler) for _ in range(2 * len(tasks))] == tasks * 2


@pytest.mark.parametrize(
    ("family_field", "expected"),
    [
        ("family", lambda task: task.data.family),
        ("spec.tier", lambda task: str(task.data.spec["tier"])),
        ("", lambda task: task.key),
        (None, lambda task: task.key),
    ],
)
def test_family_comes_from_the_configured_task_data_field(family_field, expected) -> None:
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks, family_field=family_field)
    assert sampler.family_by_key == {task.key: expected(task) for task in tasks}


def test_a_taskset_without_the_family_field_is_rejected_by_name() -> None:
    with pytest.raises(ValueError, match="no family field 'family'.*kwargs.family_field.*''"):
        SamplerCore(plain_tasks(3))
    per_task = SamplerCore(plain_tasks(3), family_field="")
    assert len(set(per_task.family_by_key.values())) == 3


def test_rewards_and_costs_of_a_group_reach_update_of_its_family() -> None:
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks, cost="total_tokens", sampler_kwargs={"group_size": 4})
    expected = twin(tasks, group_size=4)
    task = tasks[5]
    sampler.observe(
        group(
            task,
            [
                trace(task, 1.0, input_tokens=10, output_tokens=5),
                trace(task, 0.0, input_tokens=10, output_tokens=7),
                trace(task, 0.5, input_tokens=12, output_tokens=3),
            ],
        )
    )
    expected.update(expected.pool.tasks[5], [1.0, 0.0, 0.5], [15.0, 17.0, 15.0])  # the task itself (family "2")
    assert sampler.inner.state_dict() == expected.state_dict()
    assert sampler.metrics()["adapter/updates"] == 1.0


def test_success_threshold_binarizes_and_output_tokens_become_costs() -> None:
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks, success_threshold=0.5, cost="output_tokens")
    expected = twin(tasks)
    sampler.observe(group(tasks[0], [trace(tasks[0], r, output_tokens=o) for r, o in [(0.7, 4), (0.2, 6)]]))
    expected.update(expected.pool.tasks[0], [1.0, 0.0], [4.0, 6.0])
    assert sampler.inner.state_dict() == expected.state_dict()


def test_errored_traces_give_no_reward_but_their_tokens_are_counted() -> None:
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks, cost="total_tokens")
    expected = twin(tasks)
    task = tasks[9]
    traces = [
        trace(task, 1.0, input_tokens=10, output_tokens=10),
        trace(task, 1.0, ok=False, input_tokens=10, output_tokens=20),
        trace(task, 0.0, input_tokens=10, output_tokens=0),
        trace(task, 1.0, trainable=False, input_tokens=99, output_tokens=99),
    ]
    sampler.observe(group(task, traces) + [failed_episode(task)])
    # The errored trace's 30 tokens are shared by the two clean ones; the untrainable one is ignored.
    expected.update(expected.pool.tasks[9], [1.0, 0.0], [35.0, 25.0])
    assert sampler.inner.state_dict() == expected.state_dict()
    assert sampler.metrics()["adapter/errored_rollouts"] == 2.0


def test_fully_errored_and_traceless_groups_are_counted_without_an_update() -> None:
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks, cost="total_tokens")
    before = sampler.inner.state_dict()
    sampler.observe(group(tasks[0], [trace(tasks[0], 1.0, ok=False, input_tokens=8, output_tokens=4)] * 2))
    sampler.observe([failed_episode(tasks[1])])
    sampler.observe(group(tasks[2], [trace(tasks[2], 1.0, trainable=False)]))
    assert sampler.inner.state_dict() == before
    metrics = sampler.metrics()
    assert metrics["adapter/errored_groups"] == 2.0
    assert metrics["adapter/unscored_groups"] == 1.0  # episodes, but no trainable trace to read
    assert metrics["adapter/empty_groups"] == 0.0
    assert metrics["adapter/lost_tokens"] == 24.0
    assert metrics["adapter/updates"] == 0.0
    assert metrics["adapter/observed_groups"] == 3.0


def test_a_partial_group_updates_with_the_rollouts_that_arrived() -> None:
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks, cost="total_tokens", sampler_kwargs={"group_size": 8})
    expected = twin(tasks, group_size=8)
    sampler.observe(scored_group(tasks[4], [1.0, 0.0, 1.0]))
    expected.update(expected.pool.tasks[4], [1.0, 0.0, 1.0], [15.0, 15.0, 15.0])
    assert sampler.inner.state_dict() == expected.state_dict()


def test_late_and_out_of_order_feedback_is_accepted() -> None:
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks, sampler_kwargs={"group_size": 2, "seed": 1})
    drawn = [next(sampler) for _ in range(6)]
    assert sampler.metrics()["adapter/pending_groups"] == 6.0
    for task in reversed(drawn[2:]):
        sampler.observe(scored_group(task, [1.0, 0.0]))
    assert sampler.metrics()["adapter/pending_groups"] == 2.0
    undrawn = next(task for task in tasks if task not in drawn)
    sampler.observe(scored_group(undrawn, [0.0, 0.0]))  # never drawn: fine, its family exists
    metrics = sampler.metrics()
    assert metrics["adapter/updates"] == 5.0
    assert metrics["adapter/pending_groups"] >= 1.0


def _play(sampler: SamplerCore, tasks: list[vf.Task], steps: int) -> list[str]:
    keys = []
    for step in range(steps):
        task = next(sampler)
        keys.append(task.key)
        reward = 1.0 if int(task.data.family) <= 1 + step % 3 else 0.0
        sampler.observe(scored_group(task, [reward, 1.0 - reward, reward, reward]))
    return keys


@pytest.mark.parametrize("refill", [1, 3])
def test_pickled_state_resumes_the_identical_sequence(refill: int) -> None:
    tasks = family_tasks(FAMILIES)
    kwargs = {"sampler_kwargs": {"group_size": 4, "seed": 11}, "refill": refill}
    original = SamplerCore(tasks, **kwargs)
    _play(original, tasks, 20)
    next(original)  # a group in flight at checkpoint time
    state = pickle.loads(pickle.dumps(original.state_dict()))
    assert json.loads(json.dumps(state)) == state
    continued = _play(original, tasks, 30)

    resumed = SamplerCore(tasks, **kwargs)
    resumed.load_state_dict(state)
    assert resumed.metrics()["adapter/pending_groups"] == 0.0
    assert _play(resumed, tasks, 30) == continued
    assert resumed.inner.state_dict() == original.inner.state_dict()


def test_a_rejected_checkpoint_leaves_the_state_unchanged() -> None:
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks)
    _play(sampler, tasks, 5)
    before = sampler.state_dict()
    inner = sampler.inner
    bad_inner = SamplerCore(tasks[:6]).state_dict()["inner"]
    with pytest.raises(ValueError, match="version"):
        sampler.load_state_dict({**before, "version": 99})
    with pytest.raises(ValueError):
        sampler.load_state_dict({**before, "inner": bad_inner})
    with pytest.raises(ValueError, match="unknown counter 'typo'"):
        sampler.load_state_dict({**before, "counts": {**before["counts"], "typo": 1}})
    with pytest.raises(ValueError, match="family_draws"):
        sampler.load_state_dict({**before, "family_draws": [1]})
    assert sampler.state_dict() == before
    assert sampler.inner is inner


@pytest.mark.parametrize("name", ["sequential", "uniform", "curriculum"])
def test_metrics_are_flat_floats(name: str) -> None:
    tasks = family_tasks(FAMILIES)
    sampler = SamplerCore(tasks, sampler=name)
    _play(sampler, tasks, 8)
    metrics = sampler.metrics()
    assert metrics["adapter/sampled"] == 8.0
    assert all(isinstance(key, str) and type(value) is float for key, value in metrics.items())


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"famliy_field": "family"}, "kwargs.famliy_field: Extra inputs"),
        ({"refill": 0}, "kwargs.refill: Input should be greater"),
        ({"cost": "dollars"}, "kwargs.cost: Input should be"),
        ({"success_threshold": float("nan")}, "kwargs.success_threshold: Input should be a finite"),
        ({"sampler_kwargs": "group_size=8"}, "kwargs.sampler_kwargs: Input should be a valid dict"),
        ({"sampler": "greedy"}, "kwargs.sampler = 'greedy'"),
        ({"sampler_kwargs": {"gamma": 2.0}}, "gamma"),
        ({"sampler_kwargs": {"temperature": 1.0}}, "temperature"),
    ],
)
def test_bad_kwargs_fail_at_construction_naming_the_field(kwargs: dict, named: str) -> None:
    with pytest.raises(ValueError) as info:
        SamplerCore(family_tasks(FAMILIES), **kwargs)
    assert "orchestrator.train.source.curriculum.sampler.kwargs" in str(info.value)
    assert named in str(info.value)


def test_infinite_empty_or_duplicate_tasksets_are_rejected() -> None:
    tasks = family_tasks(FAMILIES)
    with pytest.raises(ValueError, match="finite taskset"):
        SamplerCore(iter(tasks))
    with pytest.raises(ValueError, match="at least one task"):
        SamplerCore([])
    with pytest.raises(ValueError, match="unique"):
        SamplerCore([tasks[0], tasks[0]])


def test_read_group_matches_a_hand_count() -> None:
    task = family_tasks({"1": 1})[0]
    report = read_group(
        group(task, [trace(task, 0.25, output_tokens=1), trace(task, 0.0, ok=False, output_tokens=3)]),
        cost="output_tokens",
    )
    assert (report.rewards, report.costs, report.errored_rollouts, report.lost_cost) == ([0.25], [4.0], 1, 0.0)


def test_cost_counts_every_model_call_of_a_multi_turn_trace() -> None:
    task = family_tasks({"1": 1})[0]
    multi = trace(task, 1.0, input_tokens=10, output_tokens=5)
    multi.calls.append(vf.ModelCall(node=1, usage=vf.Usage(prompt_tokens=30, completion_tokens=7, cached_input_tokens=15)))
    assert read_group(group(task, [multi]), cost="total_tokens").costs == [10 + 5 + 30 + 15 + 7]
    assert read_group(group(task, [multi])).costs == [12]  # the default: the generated tokens, the RFC's cost


rollouts = st.lists(
    st.tuples(
        st.floats(0.0, 1.0),  # reward
        st.booleans(),  # ok
        st.booleans(),  # trainable
        st.integers(0, 500),  # input tokens
        st.integers(0, 500),  # output tokens
    ),
    max_size=10,
)


@settings(max_examples=60, deadline=None)
@given(rollouts=rollouts, threshold=st.none() | st.floats(0.0, 1.0))
def test_read_group_keeps_clean_rewards_and_every_trainable_token(rollouts, threshold) -> None:
    task = family_tasks({"1": 1})[0]
    traces = [trace(task, r, ok=ok, trainable=tr, input_tokens=i, output_tokens=o) for r, ok, tr, i, o in rollouts]
    report = read_group(group(task, traces), success_threshold=threshold, cost="total_tokens")
    clean = [(r, i + o) for r, ok, tr, i, o in rollouts if ok and tr]
    spent = sum(i + o for _, ok, tr, i, o in rollouts if tr)
    assert len(report.rewards) == len(report.costs) == len(clean)
    assert report.errored_rollouts == sum(1 for _, ok, tr, _, _ in rollouts if tr and not ok)
    if threshold is None:
        assert report.rewards == [r for r, _ in clean]
    else:
        assert report.rewards == [1.0 if r >= threshold else 0.0 for r, _ in clean]
    assert sum(report.costs) + report.lost_cost == pytest.approx(spent)
    assert (report.lost_cost > 0) <= (not clean)
