"""Compact states (sparse.py): only keys that hold something are stored, the dense state comes back
exactly, a sampler loaded from either continues identically, and merges take them too. Also: a single
worker that loaded a base without reseeding merges as itself, and several such workers are told to
call reseed()."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.samplers import CurriculumSampler, merge_state_dicts
from openenv_prime.samplers.merge import canonical_order
from openenv_prime.samplers.sparse import STORED_KEYS, compact, expand
from sampler_helpers import KINDS, binary_group_st, build, make_pool

FAST = settings(max_examples=30, deadline=None)
SIZES = [1, 3, 1, 2, 1, 1, 4, 1]


def trained(kind: str, draws: int, updates, seed: int = 0):
    sampler = build(kind, make_pool(SIZES), seed=seed)
    sampler.sample(draws)
    for key, rewards in updates:
        sampler.update(f"k{key}", rewards, [1.0] * len(rewards))
    return sampler


updates_st = st.lists(st.tuples(st.integers(0, len(SIZES) - 1), binary_group_st), max_size=8)


@FAST
@given(kind=st.sampled_from(KINDS), draws=st.integers(0, 12), updates=updates_st)
def test_compact_keeps_exactly_the_keys_that_hold_something_and_expands_back(kind, draws, updates):
    state = trained(kind, draws, updates).state_dict()
    small = compact(state)
    held = {slot for name in ("stats", "curriculum") for column in state.get(name, {}).values()
            for slot, value in enumerate(column) if value}
    assert small[STORED_KEYS] == sorted(held)
    assert expand(json.loads(json.dumps(small))) == state


@FAST
@given(kind=st.sampled_from(KINDS), draws=st.integers(0, 12), updates=updates_st)
def test_a_sampler_loaded_from_a_compact_state_continues_identically(kind, draws, updates):
    original = trained(kind, draws, updates, seed=3)
    resumed = build(kind, make_pool(SIZES), seed=3)
    resumed.load_state_dict(json.loads(json.dumps(compact(original.state_dict()))))
    assert resumed.state_dict() == original.state_dict()
    assert resumed.sample(30) == original.sample(30)


def test_a_key_per_task_stores_only_the_drawn_keys():
    keys = 100_000
    sampler = CurriculumSampler(make_pool([1] * keys), group_size=8)
    for _ in range(1000):
        (task,) = sampler.sample(1)
        sampler.update(task.key, [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0], [30.0] * 8)
    dense, small = sampler.state_dict(), compact(sampler.state_dict())
    drawn = {slot for slot, draws in enumerate(dense["stats"]["draws"]) if draws}
    assert small[STORED_KEYS] == sorted(drawn) and len(drawn) > 900
    assert len(json.dumps(small)) < len(json.dumps(dense)) / 20
    resumed = CurriculumSampler(make_pool([1] * keys), group_size=8)
    resumed.load_state_dict(json.loads(json.dumps(small)))
    assert resumed.sample(200) == sampler.sample(200)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s.update({STORED_KEYS: [2, 1]}), "stored_keys must list each key slot once, in increasing order"),
        (lambda s: s.update({STORED_KEYS: [0, len(SIZES)]}), r"stored_keys\[1\] holds 8, outside"),
        (lambda s: s.update({STORED_KEYS: "0,1"}), "stored_keys must be a list"),
        (lambda s: s["stats"]["draws"].append(1), "stats.draws must hold 2 values, one per stored key"),
    ],
)
def test_a_broken_compact_state_is_refused_naming_the_field_and_nothing_changes(change, message):
    sampler = trained("curriculum", 0, [(0, [1.0, 0.0]), (3, [0.0, 0.0])])
    before = sampler.state_dict()
    broken = json.loads(json.dumps(compact(before)))
    change(broken)
    with pytest.raises(ValueError, match=message):
        sampler.load_state_dict(broken)
    assert sampler.state_dict() == before


def test_merges_take_compact_states():
    states = [trained("curriculum", 5, [(k, [1.0, 0.0, 1.0, 1.0])], seed=seed).state_dict()
              for k, seed in ((0, 1), (2, 2), (5, 3))]
    compacted = [compact(state) for state in states]
    assert merge_state_dicts(compacted) == merge_state_dicts(states)
    assert canonical_order(compacted) == canonical_order(states)


def _from_base(base, seed, key, reseed):
    worker = CurriculumSampler(make_pool(SIZES), group_size=4, seed=seed)
    worker.load_state_dict(base)
    if reseed:
        worker.reseed(seed)
    worker.sample(3)
    worker.update(f"k{key}", [1.0, 0.0, 0.0, 0.0])
    return worker.state_dict()


def test_a_single_worker_that_loaded_base_without_reseeding_merges_as_itself():
    base = trained("curriculum", 6, [(1, [1.0, 1.0, 0.0, 1.0])] * 3).state_dict()
    alone = _from_base(base, 7, 2, reseed=False)
    assert merge_state_dicts([alone], base=base) == alone


def test_workers_that_loaded_base_without_reseeding_are_told_to_call_reseed():
    base = trained("curriculum", 6, [(1, [1.0, 1.0, 0.0, 1.0])] * 3).state_dict()
    forgot = [_from_base(base, seed, key, reseed=False) for seed, key in ((7, 2), (8, 3))]
    with pytest.raises(ValueError, match=r"call reseed\(\) in each worker after load_state_dict\(base\)") as refused:
        merge_state_dicts(forgot, base=base)
    assert "never loaded" not in str(refused.value)
    reseeded = [_from_base(base, seed, key, reseed=True) for seed, key in ((7, 2), (8, 3))]
    merged = merge_state_dicts(reseeded, base=base)
    assert sum(merged["stats"]["groups"]) == sum(base["stats"]["groups"]) + 2
