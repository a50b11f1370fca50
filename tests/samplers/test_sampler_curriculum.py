"""The curriculum's weights: finite, floored, drawn as stated, invariant to labels, blind to cost."""

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.samplers import CurriculumSampler, Task, flat_key_metrics
from sampler_helpers import binary_group_st, chi_square, chi_square_critical, graded_group_st, make_pool, sizes_st

FAST = settings(max_examples=40, deadline=None)

updates_st = st.lists(st.tuples(st.integers(0, 5), binary_group_st), max_size=40)


def _feed(sampler, updates, keys):
    for k, rewards in updates:
        sampler.update(keys[k % len(keys)], rewards)


@FAST
@given(
    sizes=sizes_st,
    updates=updates_st,
    group_size=st.integers(2, 64),
    gamma=st.floats(0.01, 1.0),
    epsilon=st.floats(1e-6, 1.0),
    mode=st.sampled_from(["headroom", "binary", "variance"]),
)
def test_weights_are_finite_floored_and_probabilities_sum_to_one(sizes, updates, group_size, gamma, epsilon, mode):
    tasks = make_pool(sizes)
    sampler = CurriculumSampler(tasks, group_size=group_size, gamma=gamma, epsilon=epsilon, signal=mode)
    keys = sorted({t.key for t in tasks})
    _feed(sampler, updates, keys)
    metrics = sampler.metrics()
    for key in keys:
        weight = metrics[f"key/{key}/weight"]
        assert math.isfinite(weight) and weight >= epsilon
        assert weight <= 1.0 + epsilon
        assert 0.0 <= metrics[f"key/{key}/p"] <= 1.0
    probs = sampler.probabilities()
    assert abs(math.fsum(probs.values()) - 1.0) <= 1e-9
    assert all(p > 0 for p in probs.values())


@pytest.mark.parametrize("seed", [0, 1])
def test_draws_follow_the_stated_probabilities(seed):
    tasks = make_pool([3, 1, 5, 2, 4])
    sampler = CurriculumSampler(tasks, group_size=8, seed=seed)
    rng = random.Random(seed)
    for i, true_p in enumerate([0.0, 0.1, 0.5, 0.9, 1.0]):
        for _ in range(30):
            sampler.update(f"k{i}", [float(rng.random() < true_p) for _ in range(8)])
    probs = sampler.probabilities()
    draws = 20000
    drawn = sampler.sample(draws)
    observed = [sum(t.key == k for t in drawn) for k in probs]
    assert chi_square(observed, [draws * p for p in probs.values()]) < chi_square_critical(len(probs) - 1)


@FAST
@given(
    half=st.integers(2, 16),
    gamma=st.floats(0.3, 0.95),
    epsilon=st.floats(1e-4, 0.1),
    solved_reward=st.sampled_from([0.0, 1.0]),
    others=st.integers(1, 4),
)
def test_all_equal_key_sinks_to_the_floor_and_5050_key_rises_to_the_top(half, gamma, epsilon, solved_reward, others):
    group_size = 2 * half
    tasks = make_pool([2] * (2 + others))
    sampler = CurriculumSampler(tasks, group_size=group_size, gamma=gamma, epsilon=epsilon)
    quarter = [1.0] * (group_size // 4) + [0.0] * (group_size - group_size // 4)
    for _ in range(math.ceil(math.log(1e-6) / math.log(gamma))):
        sampler.update("k0", [solved_reward] * group_size)
        sampler.update("k1", [0.0, 1.0] * half)
        for other in range(2, 2 + others):
            sampler.update(f"k{other}", quarter)
    probs = sampler.probabilities()
    weights = {k: sampler.metrics()[f"key/{k}/weight"] for k in probs}
    assert weights["k0"] == pytest.approx(epsilon, abs=1e-3)
    assert probs["k0"] == min(probs.values())
    assert probs["k1"] > max(p for k, p in probs.items() if k != "k1")
    assert weights["k1"] == pytest.approx(1 - 2 * 0.5**group_size + epsilon, rel=1e-9)


@FAST
@given(
    sizes=sizes_st,
    updates=updates_st,
    seed=st.integers(0, 2**31),
    data=st.data(),
)
def test_relabeling_or_reordering_keys_keeps_the_distribution(sizes, updates, seed, data):
    tasks = make_pool(sizes)
    keys = sorted({t.key for t in tasks}, key=lambda k: int(k[1:]))
    new_names = data.draw(st.lists(st.text(min_size=1, max_size=5), min_size=len(keys), max_size=len(keys), unique=True))
    rename = dict(zip(keys, new_names))
    relabeled = [Task(t.split, t.index, rename[t.key], t.spec) for t in tasks]
    reordered = data.draw(st.permutations(relabeled))
    a = CurriculumSampler(tasks, seed=seed)
    b = CurriculumSampler(reordered, seed=seed + 1)
    for k, rewards in updates:
        key = keys[k % len(keys)]
        a.update(key, rewards)
        b.update(rename[key], rewards)
    pa, pb = a.probabilities(), b.probabilities()
    for key in keys:
        assert pa[key] == pytest.approx(pb[rename[key]], rel=1e-12, abs=1e-15)
        assert a.success_rate(key) == b.success_rate(rename[key])


@settings(max_examples=15, deadline=None)
@given(true_p=st.floats(0.0, 1.0), seed=st.integers(0, 2**31), group_size=st.sampled_from([4, 8, 16]))
def test_estimate_of_a_fixed_true_p_ends_within_005(true_p, seed, group_size):
    # gamma=0.995 keeps ~400 groups of memory: the estimate's spread is then far below 0.05.
    sampler = CurriculumSampler(make_pool([1]), group_size=group_size, gamma=0.995)
    rng = random.Random(seed)
    for _ in range(3000):
        sampler.update("k0", [float(rng.random() < true_p) for _ in range(group_size)])
    assert abs(sampler.success_rate("k0") - true_p) < 0.05


@FAST
@given(updates=updates_st, costs_seed=st.integers(0, 2**31), seed=st.integers(0, 2**31))
def test_cost_is_counted_but_never_changes_weights_or_draws(updates, costs_seed, seed):
    tasks = make_pool([2, 3, 1])
    keys = ["k0", "k1", "k2"]
    plain = CurriculumSampler(tasks, seed=seed)
    costly = CurriculumSampler(tasks, seed=seed)
    rng = random.Random(costs_seed)
    total = 0.0
    for k, rewards in updates:
        costs = [rng.uniform(0, 1e6) * (k + 1) for _ in rewards]
        total += math.fsum(costs)
        plain.update(keys[k % 3], rewards)
        costly.update(keys[k % 3], rewards, costs)
    assert plain.probabilities() == costly.probabilities()
    assert plain.sample(50) == costly.sample(50)
    assert costly.metrics()["cost"] == pytest.approx(total, rel=1e-9)
    assert plain.metrics()["cost"] == 0.0


@FAST
@given(updates=st.lists(st.tuples(st.integers(0, 2), binary_group_st), max_size=30), data=st.data())
def test_updates_of_different_keys_commute_and_need_no_draw(updates, data):
    """Async trainers report late and out of order: only the order within one key matters."""
    tasks = make_pool([2, 2, 2])
    keys = ["k0", "k1", "k2"]
    in_order = CurriculumSampler(tasks)
    shuffled = CurriculumSampler(tasks)
    for k, rewards in updates:
        in_order.update(keys[k], rewards)
    # A different interleaving that keeps each key's own order.
    queues = {k: [r for kk, r in updates if kk == k] for k in range(3)}
    while any(queues.values()):
        k = data.draw(st.sampled_from([k for k, q in queues.items() if q]))
        shuffled.update(keys[k], queues[k].pop(0))
    assert in_order.probabilities() == shuffled.probabilities()
    assert in_order.metrics() == shuffled.metrics()


def test_sampling_never_waits_for_updates():
    sampler = CurriculumSampler(make_pool([3, 3]))
    assert len(sampler.sample(100)) == 100  # no update ever came
    fresh = CurriculumSampler(make_pool([3, 3]))
    fresh.update("k1", [0.0, 1.0])  # a key it never drew
    assert fresh.metrics()["key/k1/episodes"] == 2.0


@FAST
@given(spread=st.floats(0.2, 5.0), level=st.floats(-3, 3), threshold=st.floats(-10, 10))
def test_variance_mode_ranks_graded_rewards_by_spread_without_a_threshold(spread, level, threshold):
    tasks = make_pool([2, 2])
    probs = []
    for success_threshold in (threshold, 1.0):
        sampler = CurriculumSampler(
            tasks, group_size=4, signal="variance", tolerance=0.1, success_threshold=success_threshold
        )
        for _ in range(60):
            sampler.update("k0", [level] * 4)  # constant graded reward: no signal
            sampler.update("k1", [level, level + spread, level + spread / 2, level])
        probs.append(sampler.probabilities())
    assert probs[0] == probs[1]  # the threshold plays no part in variance mode
    assert probs[0]["k1"] > 0.95
    metrics = sampler.metrics()
    assert metrics["key/k1/observed_signal"] == 1.0 and metrics["key/k0/observed_signal"] == 0.0


@FAST
@given(updates=st.lists(st.tuples(st.integers(0, 2), graded_group_st), max_size=30), draws=st.integers(0, 40))
def test_metrics_are_finite_and_consistent(updates, draws):
    tasks = make_pool([2, 1, 3])
    sampler = CurriculumSampler(tasks, signal="variance")
    sampler.sample(draws)
    for k, rewards in updates:
        sampler.update(f"k{k}", rewards, [float(len(rewards))] * len(rewards))
    m = sampler.metrics()
    assert all(isinstance(v, float) and math.isfinite(v) for v in m.values())
    for name in ("episodes", "cost", "groups", "groups_with_signal", "signal_per_episode", "signal_per_cost",
                 "predicted_signal", "observed_signal"):
        assert name in m
    for key in ("k0", "k1", "k2"):
        for name in ("p", "weight", "draw_share", "episodes", "cost", "predicted_signal", "observed_signal"):
            assert f"key/{key}/{name}" in m
    assert m["episodes"] == sum(len(r) for _, r in updates)
    assert m["groups"] == len(updates)
    assert m["groups_with_signal"] == sum(max(r) - min(r) > sampler.tolerance for _, r in updates)
    assert m["draws"] == draws
    assert set(sampler.metrics(per_key=False)) == {k for k in m if not k.startswith("key/")}


@FAST
@given(sizes=st.lists(st.integers(1, 3), min_size=1, max_size=8), draws=st.integers(0, 40), top=st.integers(0, 10),
       seed=st.integers(0, 2**31))
def test_key_metrics_are_the_flat_metrics_as_dicts_and_top_is_the_most_drawn(sizes, draws, top, seed):
    tasks = make_pool(sizes)
    sampler = CurriculumSampler(tasks, seed=seed)
    drawn = sampler.sample(draws)
    for task in drawn[::2]:
        sampler.update(task.key, [1.0, 0.0, 0.0, 1.0])
    per_key = sampler.key_metrics()
    assert list(per_key) == list(sampler.pool.keys)
    assert {**sampler.metrics(per_key=False), **flat_key_metrics(per_key)} == sampler.metrics()
    counts = {key: sum(t.key == key for t in drawn) for key in per_key}
    best = sampler.key_metrics(top=top)
    assert len(best) == min(top, len(per_key))
    assert all(best[k] == per_key[k] for k in best)
    assert all(counts[k] >= counts[o] for k in best for o in set(per_key) - set(best))
    ranked = [counts[k] for k in best]
    assert ranked == sorted(ranked, reverse=True)
    chosen = list(per_key)[::-1][:2]
    assert sampler.key_metrics(chosen) == {k: per_key[k] for k in chosen}


def test_key_metrics_refuse_unknown_keys_and_bad_counts():
    sampler = CurriculumSampler(make_pool([1, 2]))
    with pytest.raises(KeyError, match="unknown key 'nope'"):
        sampler.key_metrics(["k0", "nope"])
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(ValueError, match="top"):
            sampler.key_metrics(top=bad)


def test_every_signal_mode_draws_what_it_drew_before_its_rule_moved():
    """tests/samplers/saved_draws.py's scenario, saved with the rules written inline in curriculum.py: the same
    seeds give the same draws and the same final state in every mode."""
    import json

    from tests.samplers.saved_draws import SAVED, all_modes

    assert all_modes() == json.loads(SAVED.read_text())
