"""Merging curriculum statistics of workers: identity, order independence, counts that add up."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.samplers import CurriculumSampler, UniformSampler, merge_state_dicts
from sampler_helpers import binary_group_st, make_pool

FAST = settings(max_examples=30, deadline=None)
TASKS = make_pool([2, 3, 1])
KEYS = ["k0", "k1", "k2"]

worker_st = st.tuples(
    st.integers(0, 2**31),  # seed
    st.integers(0, 10),  # draws
    st.lists(st.tuples(st.integers(0, 2), binary_group_st, st.booleans()), max_size=12),
)


def _worker(seed, draws, updates, start=None):
    sampler = CurriculumSampler(TASKS, group_size=4, seed=seed)
    if start is not None:
        sampler.load_state_dict(start)
        sampler.reseed(seed)
    sampler.sample(draws)
    for k, rewards, with_costs in updates:
        sampler.update(KEYS[k], rewards, [0.5] * len(rewards) if with_costs else None)
    return sampler


@FAST
@given(worker=worker_st)
def test_merging_one_state_is_the_identity(worker):
    state = _worker(*worker).state_dict()
    assert merge_state_dicts([state]) == state


@FAST
@given(workers=st.lists(worker_st, min_size=2, max_size=4), data=st.data())
def test_merging_is_order_independent(workers, data):
    states = [_worker(*w).state_dict() for w in workers]
    shuffled = data.draw(st.permutations(states))
    assert json.dumps(merge_state_dicts(states), sort_keys=True) == json.dumps(merge_state_dicts(shuffled), sort_keys=True)


@FAST
@given(workers=st.lists(worker_st, min_size=1, max_size=4))
def test_counts_draws_and_costs_add_up(workers):
    samplers = [_worker(*w) for w in workers]
    merged = CurriculumSampler(TASKS, group_size=4)
    merged.load_state_dict(merge_state_dicts([s.state_dict() for s in samplers]))
    m = merged.metrics()
    for name in ("draws", "episodes", "groups", "groups_with_signal", "cost"):
        assert m[name] == pytest.approx(sum(s.metrics()[name] for s in samplers))
    for key in KEYS:
        assert m[f"key/{key}/episodes"] == sum(s.metrics()[f"key/{key}/episodes"] for s in samplers)


def test_merged_evidence_is_the_sum_of_each_workers_evidence_over_the_shared_prior():
    a, b = CurriculumSampler(TASKS, group_size=4, gamma=0.5), CurriculumSampler(TASKS, group_size=4, gamma=0.5, seed=1)
    a.update("k0", [1.0, 1.0, 1.0, 0.0])  # s = 0.5 + 3, f = 0.5 + 1
    b.update("k0", [1.0, 0.0, 0.0, 0.0])  # s = 0.5 + 1, f = 0.5 + 3
    b.update("k0", [0.0, 0.0, 0.0, 0.0])  # s = 0.25 + 0.5, f = 0.25 + 1.5 + 4
    merged = CurriculumSampler(TASKS, group_size=4, gamma=0.5)
    merged.load_state_dict(merge_state_dicts([a.state_dict(), b.state_dict()]))
    prior = 0.5**3  # three updates in all
    assert merged.success_rate("k0") == pytest.approx((prior + 3 + 0.5) / (2 * prior + 3 + 1 + 0.5 + 5.5))


@FAST
@given(first=worker_st, workers=st.lists(worker_st, min_size=1, max_size=3))
def test_a_shared_base_is_counted_once(first, workers):
    base = _worker(*first).state_dict()
    states = [_worker(*w, start=base).state_dict() for w in workers]
    merged = CurriculumSampler(TASKS, group_size=4)
    merged.load_state_dict(merge_state_dicts(states, base=base))
    m, b = merged.metrics(), _worker(*first).metrics()
    added = sum(_worker(*w, start=base).metrics()["episodes"] - b["episodes"] for w in workers)
    assert m["episodes"] == b["episodes"] + added
    # One worker on top of the base: the merge is that worker (evidence within rounding).
    alone = merge_state_dicts(states[:1], base=base)
    for name in ("successes", "failures"):
        for x, y in zip(alone["curriculum"][name], states[0]["curriculum"][name]):
            assert math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-12)


def test_merge_refuses_states_that_do_not_belong_together():
    a = CurriculumSampler(TASKS, group_size=4).state_dict()
    with pytest.raises(ValueError, match="at least one state"):
        merge_state_dicts([])
    with pytest.raises(ValueError, match="only CurriculumSampler states merge"):
        merge_state_dicts([a, UniformSampler(TASKS).state_dict()])
    with pytest.raises(ValueError, match="different task pool"):
        merge_state_dicts([a, CurriculumSampler(make_pool([2, 3])).state_dict()])
    with pytest.raises(ValueError, match="config"):
        merge_state_dicts([a, CurriculumSampler(TASKS, gamma=0.5).state_dict()])
    later = _worker(1, 0, [(0, [1.0], False)]).state_dict()
    with pytest.raises(ValueError, match="fewer .* than base"):
        merge_state_dicts([a], base=later)


def test_workers_with_different_seeds_merge_and_reseed_apart():
    states = [_worker(seed, 5, [(0, [1.0, 0.0], False)]).state_dict() for seed in (1, 2)]
    merged = merge_state_dicts(states)
    one, two = CurriculumSampler(TASKS, group_size=4, seed=1), CurriculumSampler(TASKS, group_size=4, seed=2)
    one.load_state_dict(merged), two.load_state_dict(merged)
    assert one.sample(20) == two.sample(20)  # same state, same stream ...
    one.reseed(11), two.reseed(12)
    assert one.sample(40) != two.sample(40)  # ... until each worker reseeds
