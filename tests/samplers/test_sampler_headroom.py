"""The default weight rule, signal="headroom": floored, below the RFC's binary weight, equal to it up to
p = 0.5 and non-increasing in p beyond it; an update rewrites only its key's leaf-to-root path."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.samplers import CurriculumSampler
from sampler_helpers import binary_group_st, make_pool

FAST = settings(max_examples=60, deadline=None)
updates_st = st.lists(st.tuples(st.integers(0, 3), binary_group_st), max_size=40)


def _weights(sampler):
    m = sampler.metrics()
    return {key: (m[f"key/{key}/p"], m[f"key/{key}/signal"], m[f"key/{key}/weight"]) for key in sampler.pool.keys}


def test_headroom_is_the_default_and_binary_keeps_the_rfc_rule():
    tasks = make_pool([1, 1])
    default, binary = CurriculumSampler(tasks), CurriculumSampler(tasks, signal="binary")
    assert (default.signal, default.epsilon) == ("headroom", 0.005)
    assert (binary.signal, binary.epsilon) == ("binary", 0.02)  # the RFC's rule, unchanged
    for _ in range(30):
        for sampler in (default, binary):
            sampler.update("k0", [1.0] * 7 + [0.0])  # nearly solved: p -> ~0.87
    d, b = _weights(default)["k0"], _weights(binary)["k0"]
    assert d[0] == b[0] and d[1] == b[1]  # same estimates, same predicted signal
    assert b[2] == b[1] + 0.02
    assert d[2] == d[1] * 2 * (1 - d[0]) + 0.005 < b[2]


@FAST
@given(updates=updates_st, group_size=st.integers(2, 32), gamma=st.floats(0.05, 1.0), epsilon=st.floats(1e-6, 1.0))
def test_weight_is_floored_below_binary_and_equals_it_up_to_one_half(updates, group_size, gamma, epsilon):
    sampler = CurriculumSampler(make_pool([1, 1, 1, 1]), group_size=group_size, gamma=gamma, epsilon=epsilon)
    for k, rewards in updates:
        sampler.update(f"k{k}", rewards)
    for key, (p, signal, weight) in _weights(sampler).items():
        assert math.isfinite(weight) and epsilon <= weight <= signal + epsilon + 1e-12
        if p <= 0.5:
            assert weight == signal + epsilon


@FAST
@given(a=st.lists(binary_group_st, max_size=30), b=st.lists(binary_group_st, max_size=30), group_size=st.integers(2, 32))
def test_weight_rises_with_p_up_to_one_half_and_falls_after(a, b, group_size):
    """The claimed shape: unimodal in p with its top at 0.5 (the binary signal's own shape below 0.5)."""
    sampler = CurriculumSampler(make_pool([1, 1]), group_size=group_size, epsilon=1e-3)
    for rewards in a:
        sampler.update("k0", rewards)
    for rewards in b:
        sampler.update("k1", rewards)
    (p0, _, w0), (p1, _, w1) = _weights(sampler).values()
    (lo_p, lo_w), (hi_p, hi_w) = sorted([(p0, w0), (p1, w1)])
    if lo_p >= 0.5:
        assert hi_w <= lo_w + 1e-12
    if hi_p <= 0.5:
        assert lo_w <= hi_w + 1e-12


@FAST
@given(keys=st.integers(1, 300), updates=st.lists(st.tuples(st.integers(0, 299), binary_group_st), min_size=1, max_size=20),
       mode=st.sampled_from(["headroom", "binary", "variance"]))
def test_an_update_rewrites_only_its_keys_leaf_to_root_path(keys, updates, mode):
    """O(log K): one update changes the key's leaf and its ancestors in the sum tree, nothing else."""
    sampler = CurriculumSampler(make_pool([1] * keys), signal=mode)
    for k, rewards in updates:
        slot = k % keys
        before = list(sampler._tree.nodes)
        sampler.update(f"k{slot}", rewards)
        after = sampler._tree.nodes
        path, j = set(), sampler._tree.size + slot
        while j:
            path.add(j)
            j >>= 1
        assert len(path) <= math.ceil(math.log2(max(keys, 2))) + 2
        assert {i for i, (x, y) in enumerate(zip(before, after)) if x != y} <= path
