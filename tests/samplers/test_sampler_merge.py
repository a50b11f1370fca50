"""Merging workers' curriculum states: what one sampler fed every worker's groups (evenly interleaved) would hold."""

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openenv_prime.samplers import CurriculumSampler, UniformSampler, merge_state_dicts
from openenv_prime.samplers.merge import canonical_order, interleaving
from sampler_helpers import binary_group_st, make_pool

FAST = settings(max_examples=30, deadline=None)
REFERENCE = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TASKS = make_pool([2, 3, 1])
KEYS = ["k0", "k1", "k2"]
G = 4

worker_st = st.tuples(
    st.integers(0, 10),  # draws
    st.lists(st.tuples(st.integers(0, 2), binary_group_st, st.booleans()), max_size=12),
)
workers_st = st.lists(worker_st, min_size=1, max_size=4)


def _worker(seed, draws, updates, start=None, **settings):
    sampler = CurriculumSampler(TASKS, group_size=G, seed=seed, **settings)
    if start is not None:
        sampler.load_state_dict(start)
        sampler.reseed(seed)  # each worker its own stream after loading the shared state
    sampler.sample(draws)
    with_costs = bool(updates) and updates[0][2]  # a sampler reports costs for every group or for none
    for k, rewards, _ in updates:
        sampler.update(KEYS[k], rewards, [0.5] * len(rewards) if with_costs else None)
    return sampler


def _workers(specs, start=None, **kw):
    return [_worker(100 + i, *spec, start=start, **kw) for i, spec in enumerate(specs)]


@FAST
@given(worker=worker_st)
def test_merging_one_state_is_the_identity(worker):
    state = _worker(1, *worker).state_dict()
    assert merge_state_dicts([state]) == state


@FAST
@given(specs=st.lists(worker_st, min_size=2, max_size=4), data=st.data())
def test_merging_is_order_independent(specs, data):
    states = [w.state_dict() for w in _workers(specs)]
    shuffled = data.draw(st.permutations(states))
    assert json.dumps(merge_state_dicts(states), sort_keys=True) == json.dumps(merge_state_dicts(shuffled), sort_keys=True)


@FAST
@given(specs=workers_st)
def test_counts_draws_and_costs_add_up(specs):
    samplers = _workers(specs)
    merged = CurriculumSampler(TASKS, group_size=G)
    merged.load_state_dict(merge_state_dicts([s.state_dict() for s in samplers]))
    m = merged.metrics()
    for name in ("draws", "episodes", "groups", "groups_with_signal", "cost"):
        assert m[name] == pytest.approx(sum(s.metrics()[name] for s in samplers))
    for key in KEYS:
        assert m[f"key/{key}/episodes"] == sum(s.metrics()[f"key/{key}/episodes"] for s in samplers)


def test_interleaving_spreads_each_workers_groups_evenly():
    assert interleaving([1, 3]) == [1, 0, 1, 1]  # worker 0 at 1/2; worker 1 at 1/6, 1/2 (tie: index order), 5/6
    assert interleaving([2, 2]) == [0, 1, 0, 1]
    assert interleaving([0, 2, 4]) == [2, 1, 2, 2, 1, 2]
    order = interleaving([3, 5, 7])
    assert [order.count(i) for i in range(3)] == [3, 5, 7]


# -- against the reference: one sampler fed every worker's groups, evenly interleaved ------------------------------

group_of_g_st = st.lists(st.sampled_from([0.0, 1.0]), min_size=G, max_size=G)
key_groups_st = st.lists(st.tuples(st.integers(0, 2), group_of_g_st), max_size=10)


def _feed(sampler, groups):
    for k, rewards in groups:
        sampler.update(KEYS[k], rewards)


def _reference(base, worker_groups, states, gamma, signal):
    """One sampler from ``base`` fed, key by key, every worker's groups in the order `interleaving` defines."""
    reference = CurriculumSampler(TASKS, group_size=G, gamma=gamma, signal=signal)
    if base is not None:
        reference.load_state_dict(base)
    ranked = [worker_groups[i] for i in canonical_order(states)]
    for k in range(len(KEYS)):
        own = [[rewards for key, rewards in groups if key == k] for groups in ranked]
        taken = [0] * len(own)
        for i in interleaving([len(o) for o in own]):
            reference.update(KEYS[k], own[i][taken[i]])
            taken[i] += 1
    return reference


def _share(state, slot, gamma):
    learned = state["curriculum"]
    prior = gamma ** learned["updates"][slot]
    hit = prior + learned["spread"][slot]
    return hit / (hit + prior + learned["flat"][slot])


@REFERENCE
@given(
    warmup=key_groups_st,
    with_base=st.booleans(),
    worker_groups=st.lists(key_groups_st, min_size=1, max_size=4),
    gamma=st.sampled_from([0.5, 0.9, 0.97, 1.0]),
    signal=st.sampled_from(["binary", "variance"]),
)
def test_merge_matches_one_sampler_fed_all_groups_interleaved(warmup, with_base, worker_groups, gamma, signal):
    base = None
    if with_base:
        first = CurriculumSampler(TASKS, group_size=G, gamma=gamma, signal=signal, seed=7)
        _feed(first, warmup)
        base = first.state_dict()
    samplers = []
    for i, groups in enumerate(worker_groups):
        sampler = CurriculumSampler(TASKS, group_size=G, gamma=gamma, signal=signal, seed=i)
        if base is not None:
            sampler.load_state_dict(base)
            sampler.reseed(i)
        _feed(sampler, groups)
        samplers.append(sampler)
    states = [s.state_dict() for s in samplers]
    merged_state = merge_state_dicts(states, base=base)
    merged = CurriculumSampler(TASKS, group_size=G, gamma=gamma, signal=signal)
    merged.load_state_dict(merged_state)
    reference = _reference(base, worker_groups, states, gamma, signal)
    ref_state = reference.state_dict()
    m, r = merged_state["curriculum"], ref_state["curriculum"]
    assert m["updates"] == r["updates"]
    for slot, key in enumerate(KEYS):
        # The decayed mass of the evidence (how much it remembers) is the reference's ...
        assert math.isclose(m["successes"][slot] + m["failures"][slot], r["successes"][slot] + r["failures"][slot], rel_tol=1e-9, abs_tol=1e-12)
        assert math.isclose(m["spread"][slot] + m["flat"][slot], r["spread"][slot] + r["flat"][slot], rel_tol=1e-9, abs_tol=1e-12)
        # ... and p differs by at most the widest range of one worker's per-group success fractions on this key.
        fractions = [[sum(g) / G for k, g in groups if k == slot] for groups in worker_groups]
        spread = [[max(g) > min(g) for k, g in groups if k == slot] for groups in worker_groups]
        bound = max((max(f) - min(f) for f in fractions if f), default=0.0)
        assert abs(merged.success_rate(key) - reference.success_rate(key)) <= bound + 1e-9
        share_bound = max((max(s) - min(s) for s in spread if s), default=0)
        assert abs(_share(merged_state, slot, gamma) - _share(ref_state, slot, gamma)) <= share_bound + 1e-9


@REFERENCE
@given(
    outcomes=st.lists(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 6)), min_size=3, max_size=3), min_size=2, max_size=5),
    gamma=st.sampled_from([0.5, 0.9, 0.97]),
)
def test_workers_with_steady_outcomes_merge_exactly_to_the_reference(outcomes, gamma):
    """Worker i's groups of key k all have successes[i][k] of G (repeated count[i][k] times): no information is lost."""
    worker_groups = [
        [(k, [1.0] * s + [0.0] * (G - s)) for k, (s, count) in enumerate(per_key) for _ in range(count)]
        for per_key in outcomes
    ]
    samplers = []
    for i, groups in enumerate(worker_groups):
        sampler = CurriculumSampler(TASKS, group_size=G, gamma=gamma, seed=i)
        _feed(sampler, groups)
        samplers.append(sampler)
    states = [s.state_dict() for s in samplers]
    merged = merge_state_dicts(states)
    reference = _reference(None, worker_groups, states, gamma, "binary").state_dict()
    for name in ("successes", "failures", "spread", "flat"):
        for x, y in zip(merged["curriculum"][name], reference["curriculum"][name]):
            assert math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12), name


def test_eight_merged_workers_forget_like_one_sampler():
    """Issue 10: after merging 8 workers one failed group moved p from 0.99 to 0.986; one sampler goes to ~0.89."""
    def group(worker):  # worker 0 keeps missing one rollout in 8, the others solve the key
        return [1.0] * 7 + [0.0] if worker == 0 else [1.0] * 8

    workers = []
    for seed in range(8):
        w = CurriculumSampler(TASKS, group_size=8, seed=seed)
        for _ in range(40):
            w.update("k0", group(seed))
        workers.append(w)
    states = [w.state_dict() for w in workers]
    merged = CurriculumSampler(TASKS, group_size=8)
    merged.load_state_dict(merge_state_dicts(states))
    single = CurriculumSampler(TASKS, group_size=8)
    for _ in range(40):  # equal counts: round robin, ties in canonical order
        for seed in canonical_order(states):
            single.update("k0", group(seed))
    assert merged.success_rate("k0") == pytest.approx(single.success_rate("k0"), abs=1e-9)
    assert merged.success_rate("k0") > 0.98
    merged.update("k0", [0.0] * 8)
    single.update("k0", [0.0] * 8)
    assert merged.success_rate("k0") == pytest.approx(single.success_rate("k0"), abs=1e-9)
    assert merged.success_rate("k0") < 0.9


def test_a_hand_computed_merge():
    """gamma 0.5; a: one group 3/4; b: 1/4 then 0/4. Reference order b, a, b (a at 1/2, b at 1/4 and 3/4)."""
    a, b = CurriculumSampler(TASKS, group_size=4, gamma=0.5), CurriculumSampler(TASKS, group_size=4, gamma=0.5, seed=1)
    a.update("k0", [1.0, 1.0, 1.0, 0.0])
    b.update("k0", [1.0, 0.0, 0.0, 0.0])
    b.update("k0", [0.0, 0.0, 0.0, 0.0])
    merged = CurriculumSampler(TASKS, group_size=4, gamma=0.5)
    merged.load_state_dict(merge_state_dicts([a.state_dict(), b.state_dict()]))
    prior = 0.5**3
    # a's one group sits at age 1 in the reference (c = 0.5); b's groups at ages 0 and 2: weight 1.25 against 1.5 of its own.
    s = 0.5 * 3 + (1.25 / 1.5) * (0.5 * 1 + 0)
    f = 0.5 * 1 + (1.25 / 1.5) * (0.5 * 3 + 4)
    assert merged.success_rate("k0") == pytest.approx((prior + s) / (2 * prior + s + f))
    assert s + f == pytest.approx(0.5 * 4 + 1.0 * 4 + 0.25 * 4)  # the reference's mass exactly


# -- shared history: base, lineage, the common mistake -------------------------------------------------------------


@FAST
@given(first=worker_st, specs=st.lists(worker_st, min_size=1, max_size=3))
def test_a_shared_base_is_counted_once(first, specs):
    base = _worker(1, *first).state_dict()
    states = [w.state_dict() for w in _workers(specs, start=base)]
    merged = CurriculumSampler(TASKS, group_size=G)
    merged.load_state_dict(merge_state_dicts(states, base=base))
    added = sum(w.metrics()["episodes"] - _worker(1, *first).metrics()["episodes"] for w in _workers(specs, start=base))
    assert merged.metrics()["episodes"] == _worker(1, *first).metrics()["episodes"] + added
    # One worker on top of the base: the merge is that worker (evidence within rounding).
    alone = merge_state_dicts(states[:1], base=base)
    for name in ("successes", "failures"):
        for x, y in zip(alone["curriculum"][name], states[0]["curriculum"][name]):
            assert math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-12)


def test_workers_from_one_shared_state_cannot_be_merged_without_base():
    shared = _worker(1, 3, [(0, [1.0, 0.0, 1.0, 1.0], False)] * 5).state_dict()
    states = [w.state_dict() for w in _workers([(2, [(1, [1.0, 0.0], False)])] * 3, start=shared)]
    with pytest.raises(ValueError, match=r"both continue from one shared state .* pass that state as base="):
        merge_state_dicts(states)
    merge_state_dicts(states, base=shared)  # the right call


def test_a_base_the_states_did_not_grow_from_is_refused():
    """Issue 10: such a base gave negative evidence, which then loaded."""
    later = _worker(1, 0, [(0, [1.0, 1.0, 1.0, 1.0], False)] * 6).state_dict()
    fresh_workers = [w.state_dict() for w in _workers([(0, [(0, [0.0, 1.0], False)] * 8)] * 2)]
    with pytest.raises(ValueError, match="does not descend from base"):
        merge_state_dicts(fresh_workers, base=later)
    other = _worker(2, 0, [(0, [0.0, 0.0], False)]).state_dict()
    from_other = [w.state_dict() for w in _workers([(1, [(1, [1.0], False)])] * 2, start=other)]
    with pytest.raises(ValueError, match="does not descend from base"):
        merge_state_dicts(from_other, base=later)


def test_the_same_state_twice_is_refused():
    state = _worker(1, 2, [(0, [1.0, 0.0], False)]).state_dict()
    with pytest.raises(ValueError, match=r"states\[0\] and states\[1\] are the same state"):
        merge_state_dicts([state, json.loads(json.dumps(state))])


def test_resumed_workers_and_rounds_of_merges_work_and_the_base_moves_with_each_round():
    states = [w.state_dict() for w in _workers([(2, [(0, [1.0, 0.0], False)] * 3)] * 3)]
    resumed = []
    for i, state in enumerate(states):  # each worker crashes and resumes from its own checkpoint
        again = CurriculumSampler(TASKS, group_size=G, seed=100 + i)
        again.load_state_dict(state)
        again.update("k1", [1.0, 1.0])
        resumed.append(again.state_dict())
    round1 = merge_state_dicts(resumed)  # own checkpoints are not shared history
    round2_states = [w.state_dict() for w in _workers([(1, [(2, [0.0, 1.0], False)])] * 3, start=round1)]
    with pytest.raises(ValueError, match="shared state"):
        merge_state_dicts(round2_states)
    round2 = merge_state_dicts(round2_states, base=round1)
    with pytest.raises(ValueError, match="does not descend from base"):
        merge_state_dicts(round2_states, base=states[0])
    assert sum(round2["stats"]["groups"]) == sum(round1["stats"]["groups"]) + 3
    # Merges of merges: two groups of workers, each merged on top of round2, then merged together on top of round2.
    halves = [
        merge_state_dicts([w.state_dict() for w in _workers([(1, [(k, [1.0, 0.0], False)])] * 2, start=round2)], base=round2)
        for k in (0, 1)
    ]
    total = merge_state_dicts(halves, base=round2)
    assert sum(total["stats"]["groups"]) == sum(round2["stats"]["groups"]) + 4


def test_merge_refuses_states_that_do_not_belong_together():
    a = CurriculumSampler(TASKS, group_size=G).state_dict()
    with pytest.raises(ValueError, match="at least one state"):
        merge_state_dicts([])
    with pytest.raises(ValueError, match="only CurriculumSampler states merge"):
        merge_state_dicts([a, UniformSampler(TASKS).state_dict()])
    with pytest.raises(ValueError, match="different task pool"):
        merge_state_dicts([a, CurriculumSampler(make_pool([2, 3])).state_dict()])
    with pytest.raises(ValueError, match="config"):
        merge_state_dicts([a, CurriculumSampler(TASKS, gamma=0.5).state_dict()])
    broken = json.loads(json.dumps(a))
    broken["curriculum"]["failures"][1] = -1.0
    with pytest.raises(ValueError, match=r"states\[1\]: state_dict field curriculum\.failures holds -1\.0"):
        merge_state_dicts([_worker(3, 0, []).state_dict(), broken])


def test_workers_with_different_seeds_merge_and_reseed_apart():
    states = [_worker(seed, 5, [(0, [1.0, 0.0], False)]).state_dict() for seed in (1, 2)]
    merged = merge_state_dicts(states)
    one, two = CurriculumSampler(TASKS, group_size=G, seed=1), CurriculumSampler(TASKS, group_size=G, seed=2)
    one.load_state_dict(merged), two.load_state_dict(merged)
    assert one.sample(20) == two.sample(20)  # same state, same stream ...
    one.reseed(11), two.reseed(12)
    assert one.sample(40) != two.sample(40)  # ... until each worker reseeds


def test_loading_records_nothing_and_reseed_records_the_state_loaded_before():
    shared = _worker(1, 3, [(0, [1.0, 0.0, 1.0, 1.0], False)] * 5).state_dict()
    late = CurriculumSampler(TASKS, group_size=G, seed=1)
    late.load_state_dict(shared)
    assert late.state_dict() == shared  # a resumed checkpoint is exactly the saved one
    late.sample(4)
    late.update("k1", [1.0, 0.0])
    late.reseed(21)  # after some work: still records where it forked
    early = _workers([(2, [(2, [0.0, 1.0], False)])], start=shared)[0]
    states = [late.state_dict(), early.state_dict()]
    with pytest.raises(ValueError, match="shared state"):
        merge_state_dicts(states)
    merged = merge_state_dicts(states, base=shared)
    assert sum(merged["stats"]["groups"]) == sum(shared["stats"]["groups"]) + 2
    late.reseed(22)  # reseeding again adds no second record of the same fork
    assert late.state_dict()["lineage"] == states[0]["lineage"]


def test_workers_that_load_a_merged_state_without_reseeding_are_caught():
    round1 = merge_state_dicts([w.state_dict() for w in _workers([(2, [(0, [1.0, 0.0], False)])] * 2)])
    round2 = merge_state_dicts([w.state_dict() for w in _workers([(2, [(1, [1.0, 0.0], False)])] * 2, start=round1)], base=round1)
    forgot = []
    for i in range(2):  # loaded round2 but never reseeded: they draw the same tasks
        w = CurriculumSampler(TASKS, group_size=G, seed=i)
        w.load_state_dict(round2)
        w.update("k2", [float(i), 1.0])
        forgot.append(w.state_dict())
    with pytest.raises(ValueError, match="shared state"):
        merge_state_dicts(forgot)
    with pytest.raises(ValueError, match=r"does not descend from base.*reseed"):
        merge_state_dicts(forgot, base=round2)
