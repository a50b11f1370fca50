"""Per-task evidence inside a key (taskevidence.py): the within-key draw it thins, its state and its merge."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.samplers import CurriculumSampler, Task, merge_state_dicts
from openenv_prime.samplers.merge import canonical_order, interleaving
from openenv_prime.samplers.taskevidence import MAX_PROPOSALS, PRIOR
from sampler_helpers import binary_group_st, frozen, make_pool

FAST = settings(max_examples=40, deadline=None)
G = 4


@FAST
@given(sizes=st.lists(st.integers(1, 6), min_size=1, max_size=5), seed=st.integers(0, 2**31),
       groups=st.lists(st.tuples(st.integers(0, 4), binary_group_st), max_size=20), n=st.integers(0, 40))
def test_without_per_task_reports_the_draws_are_the_plain_cycle(sizes, seed, groups, n):
    """Updates by key leave no per-task evidence: within="signal" then draws exactly what within="cycle" does."""
    tasks = make_pool(sizes)
    keys = sorted({t.key for t in tasks})
    thinned = CurriculumSampler(tasks, group_size=G, seed=seed)
    plain = CurriculumSampler(tasks, group_size=G, seed=seed, within="cycle")
    for k, rewards in groups:
        assert thinned.sample(2) == plain.sample(2)
        for sampler in (thinned, plain):
            sampler.update(keys[k % len(keys)], rewards)
    assert thinned.sample(n) == plain.sample(n)
    assert thinned.state_dict()["task_evidence"] == []


def test_a_task_that_is_always_solved_is_drawn_less_than_its_siblings_in_proportion():
    """Key k0 holds a task solved every time and tasks solved half the time: the solved one is kept with
    probability w(p_task) / w(p_key) (w: the frontier weight without its floor), the others always."""
    tasks = [Task("train", i, "k0") for i in range(4)]
    sampler = CurriculumSampler(tasks, group_size=G, gamma=1.0, seed=3)
    for _ in range(6):
        sampler.update(tasks[0], [1.0] * G)
        for task in tasks[1:]:
            sampler.update(task, [1.0, 0.0] * (G // 2))
    drawn = [t.index for t in sampler.sample(40_000)]
    p_key = sampler.success_rate("k0")
    s, f = 6.0 * G, 0.0
    p_task = (PRIOR * p_key + s) / (PRIOR + s + f)
    keep = sampler._task_weight(p_task) / sampler._task_weight(p_key)
    assert 0.0 < keep < 0.2
    # Per pass of the 4-task cycle the solved task is kept with probability `keep` (after MAX_PROPOSALS
    # rejections in a row a task is kept anyway, which three siblings that are always kept make impossible).
    expected = keep / (3 + keep)
    share = drawn.count(0) / len(drawn)
    assert abs(share - expected) < 5 * math.sqrt(expected * (1 - expected) / len(drawn))
    assert {drawn.count(i) for i in (1, 2, 3)} and min(drawn.count(i) for i in (1, 2, 3)) > 9_000


def test_a_key_whose_tasks_all_look_hopeless_still_draws_after_at_most_max_proposals():
    tasks = [Task("train", i, "k0") for i in range(3)] + [Task("train", 3, "k1")]
    sampler = CurriculumSampler(tasks, group_size=G, gamma=1.0)
    for _ in range(20):
        sampler.update("k0", [1.0, 0.0] * (G // 2))  # the key looks ideal ...
        for task in tasks[:3]:
            sampler.update(task, [1.0] * G)  # ... each of its tasks solved: every proposal is likely rejected
    draws = sampler.sample(200)
    assert {t.key for t in draws} == {"k0", "k1"} and len(draws) == 200
    assert MAX_PROPOSALS >= 2


@FAST
@given(sizes=st.lists(st.integers(1, 5), min_size=1, max_size=4), seed=st.integers(0, 2**31),
       groups=st.lists(st.tuples(st.integers(0, 30), binary_group_st), min_size=1, max_size=25))
def test_only_reported_tasks_of_keys_with_several_tasks_are_stored(sizes, seed, groups):
    tasks = make_pool(sizes)
    sampler = CurriculumSampler(tasks, group_size=G, seed=seed)
    reported = set()
    for i, rewards in groups:
        task = tasks[i % len(tasks)]
        sampler.update(task, rewards)
        if sizes[int(task.key[1:])] > 1:
            reported.add(i % len(tasks))
    entries = sampler.state_dict()["task_evidence"]
    assert [entry[0] for entry in entries] == sorted(reported)
    assert all(entry[1] >= 1 and entry[2] + entry[3] > 0 for entry in entries)
    cycle = CurriculumSampler(tasks, group_size=G, seed=seed, within="cycle")
    for i, rewards in groups:
        cycle.update(tasks[i % len(tasks)], rewards)
    assert "task_evidence" not in cycle.state_dict()  # within="cycle" keeps none: its state is as before


def test_reporting_a_task_the_pool_lacks_is_an_error_naming_it_and_changes_nothing():
    tasks = make_pool([2, 2])
    sampler = CurriculumSampler(tasks, group_size=G)
    sampler.update(tasks[0], [1.0, 0.0, 1.0, 1.0])
    before = frozen(sampler)
    with pytest.raises(KeyError, match="is not a task of this pool"):
        sampler.update(Task("train", 99, "k0"), [1.0])
    with pytest.raises(KeyError, match="has key 'k1', but this pool's task"):
        sampler.update(Task(tasks[0].split, tasks[0].index, "k1"), [1.0])
    assert frozen(sampler) == before


def _state_with_evidence():
    tasks = make_pool([3, 1, 2])
    sampler = CurriculumSampler(tasks, group_size=G)
    for task in tasks:
        sampler.update(task, [1.0, 0.0, 0.0, 1.0])
    return tasks, sampler, json.loads(json.dumps(sampler.state_dict()))


@pytest.mark.parametrize(
    "evidence, message",
    [
        ("x", r"task_evidence must be a list"),
        ([[0, 1, 1.0]], r"task_evidence\[0\] must be \[position, updates, successes, failures\]"),
        ([[6, 1, 1.0, 1.0]], r"task_evidence\[0\]\[0\] \(position\) holds 6, outside \[0, 5\]"),
        ([[2, 1, 1.0, 1.0], [0, 1, 1.0, 1.0]], r"task_evidence\[1\] must come after the entry before it"),
        ([[1, 1, 1.0, 1.0]], r"task_evidence\[0\] holds evidence for the only task of key 'k1'"),
        ([[0, 0, 1.0, 1.0]], r"task_evidence\[0\] has 0 updates"),
        ([[0, 1, -1.0, 1.0]], r"task_evidence\[0\]\[2\] \(successes\) holds -1\.0, not a finite number >= 0"),
        ([[0, 1, 1.0, math.inf]], r"task_evidence\[0\]\[3\] \(failures\) holds inf"),
    ],
)
def test_bad_task_evidence_is_refused_naming_the_field_and_changes_nothing(evidence, message):
    tasks, sampler, state = _state_with_evidence()
    state["task_evidence"] = evidence
    target = CurriculumSampler(tasks, group_size=G, seed=5)
    before = frozen(target)
    with pytest.raises(ValueError, match=message):
        target.load_state_dict(state)
    assert frozen(target) == before


def test_a_state_saved_before_within_existed_loads_into_within_cycle_and_the_default_names_the_setting():
    tasks = make_pool([2, 2])
    old = CurriculumSampler(tasks, group_size=G, signal="headroom")
    old.update("k0", [1.0, 0.0, 1.0, 1.0])
    state = old.state_dict()
    del state["config"]["within"]  # as saved before the setting existed
    again = CurriculumSampler(tasks, group_size=G, signal="headroom")
    again.load_state_dict(state)
    assert again.sample(5) == old.sample(5)
    with pytest.raises(ValueError, match="construct the sampler with the saved settings"):
        CurriculumSampler(tasks, group_size=G).load_state_dict(state)
    with pytest.raises(ValueError, match="within='signal' thins a key's tasks"):
        CurriculumSampler(tasks, signal="variance", within="signal")
    with pytest.raises(ValueError, match="within must be one of"):
        CurriculumSampler(tasks, within="tasks")


# -- merging per-task evidence: each task's groups evenly interleaved over the workers, as the keys' are ---------

task_groups_st = st.lists(st.tuples(st.integers(0, 5), st.lists(st.sampled_from([0.0, 1.0]), min_size=G, max_size=G)),
                          max_size=12)
MERGE_TASKS = make_pool([3, 1, 2])


def _reference_evidence(worker_groups, states, gamma):
    """Per task: a sampler fed that task's groups of every worker in the order `interleaving` defines."""
    reference = CurriculumSampler(MERGE_TASKS, group_size=G, gamma=gamma)
    ranked = [worker_groups[i] for i in canonical_order(states)]
    for position, task in enumerate(MERGE_TASKS):
        own = [[rewards for t, rewards in groups if t == position] for groups in ranked]
        taken = [0] * len(own)
        for i in interleaving([len(o) for o in own]):
            reference.update(task, own[i][taken[i]])
            taken[i] += 1
    return {entry[0]: entry[1:] for entry in reference.state_dict()["task_evidence"]}


@settings(max_examples=60, deadline=None)
@given(worker_groups=st.lists(task_groups_st, min_size=1, max_size=4), gamma=st.sampled_from([0.5, 0.9, 1.0]))
def test_merged_task_evidence_remembers_what_one_sampler_fed_every_workers_groups_would(worker_groups, gamma):
    samplers = []
    for i, groups in enumerate(worker_groups):
        sampler = CurriculumSampler(MERGE_TASKS, group_size=G, gamma=gamma, seed=i)
        for position, rewards in groups:
            sampler.update(MERGE_TASKS[position], rewards)
        samplers.append(sampler)
    states = [s.state_dict() for s in samplers]
    merged = merge_state_dicts(states)
    CurriculumSampler(MERGE_TASKS, group_size=G, gamma=gamma).load_state_dict(merged)  # loads
    got = {entry[0]: entry[1:] for entry in merged["task_evidence"]}
    want = _reference_evidence(worker_groups, states, gamma)
    assert set(got) == set(want)
    for position, (updates, s, f) in want.items():
        assert got[position][0] == updates
        assert math.isclose(got[position][1] + got[position][2], s + f, rel_tol=1e-9, abs_tol=1e-12)
        steady = all(len({sum(r) for t, r in groups if t == position}) <= 1 for groups in worker_groups)
        if steady:  # each worker's groups of the task alike: nothing is lost
            assert math.isclose(got[position][1], s, rel_tol=1e-9, abs_tol=1e-12)


def test_merging_workers_that_started_from_a_base_with_task_evidence_counts_the_base_once():
    base_sampler = CurriculumSampler(MERGE_TASKS, group_size=G)
    for task in MERGE_TASKS:
        base_sampler.update(task, [1.0, 1.0, 0.0, 0.0])
    base = base_sampler.state_dict()
    states = []
    for seed in range(3):
        worker = CurriculumSampler(MERGE_TASKS, group_size=G)
        worker.load_state_dict(base)
        worker.reseed(seed)
        worker.update(MERGE_TASKS[0], [1.0] * G)
        states.append(worker.state_dict())
    merged = merge_state_dicts(states, base=base)
    evidence = {entry[0]: entry for entry in merged["task_evidence"]}
    assert evidence[0][1] == 1 + 3 and evidence[2] == [2, 1, 2.0, 2.0]  # task 2: the base's, untouched
    shrunk = [entry for entry in states[0]["task_evidence"] if entry[0] == 0][0]
    shrunk[1], shrunk[2] = 1, 0.0  # as if the worker had not reported task 0, yet with less than the base holds
    with pytest.raises(ValueError, match=r"states\[\d\] holds less task_evidence for task 0 than base"):
        merge_state_dicts(states, base=base)
