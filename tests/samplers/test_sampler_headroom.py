"""The headroom weight rules, signal="frontier" (the default) and "headroom": floored, below the RFC's binary
weight, equal to it up to p = 0.5 and non-increasing in p beyond it; an update rewrites only its key's
leaf-to-root path."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

import pytest

from openenv_prime.samplers import CurriculumSampler, Task
from sampler_helpers import binary_group_st, make_pool

FAST = settings(max_examples=60, deadline=None)
updates_st = st.lists(st.tuples(st.integers(0, 3), binary_group_st), max_size=40)


def _weights(sampler):
    m = sampler.metrics()
    return {key: (m[f"key/{key}/p"], m[f"key/{key}/signal"], m[f"key/{key}/weight"]) for key in sampler.pool.keys}


def test_frontier_is_the_default_and_calibrated_headroom_and_binary_keep_their_rules():
    tasks = make_pool([1, 1])
    assert (CurriculumSampler(tasks).signal, CurriculumSampler(tasks).within) == ("frontier", "signal")
    calibrated = CurriculumSampler(tasks, signal="calibrated")
    assert (calibrated.signal, calibrated.epsilon, calibrated.within) == ("calibrated", 0.005, "signal")
    default = CurriculumSampler(tasks)
    headroom, binary = CurriculumSampler(tasks, signal="headroom"), CurriculumSampler(tasks, signal="binary")
    assert (default.signal, default.epsilon, default.within) == ("frontier", 0.005, "signal")
    assert (headroom.signal, headroom.epsilon, headroom.within) == ("headroom", 0.005, "cycle")  # the default before frontier
    assert (binary.signal, binary.epsilon, binary.within) == ("binary", 0.02, "cycle")  # the RFC's rule, unchanged
    for _ in range(30):
        for sampler in (default, headroom, binary):
            sampler.update("k0", [1.0] * 7 + [0.0])  # nearly solved: p -> ~0.87
    d, h, b = _weights(default)["k0"], _weights(headroom)["k0"], _weights(binary)["k0"]
    assert d[:2] == h[:2] == b[:2]  # same estimates, same predicted signal
    assert b[2] == b[1] + 0.02
    assert h[2] == h[1] * 2 * (1 - h[0]) + 0.005 < b[2]
    assert d[2] == d[1] * (2 * (1 - d[0])) ** 2 + 0.005 < h[2]


@FAST
@given(a=st.lists(binary_group_st, max_size=30), b=st.lists(binary_group_st, max_size=30), group_size=st.integers(2, 32),
       mode=st.sampled_from(["frontier", "headroom"]))
def test_weight_rises_with_p_up_to_one_half_and_falls_after(a, b, group_size, mode):
    """The claimed shape: unimodal in p with its top at 0.5 (the binary signal's own shape below 0.5)."""
    sampler = CurriculumSampler(make_pool([1, 1]), group_size=group_size, epsilon=1e-3, signal=mode)
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
       mode=st.sampled_from(["frontier", "headroom", "binary", "variance"]))
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


@given(groups=st.lists(st.lists(st.sampled_from([0.0, 1.0]), min_size=4, max_size=4), min_size=1, max_size=6),
       gamma=st.floats(0.5, 1.0))
def test_binary_weighs_a_key_by_the_documented_formula(groups, gamma):
    """signal="binary": weight = 1 - p^G - (1-p)^G + 0.02 with p = (g^n + s) / (2 g^n + s + f) over decayed counts
    (the RFC's weight; its prior fades with the evidence, where the RFC's stays Beta(1, 1): docs/samplers.md)."""
    sampler = CurriculumSampler([Task("train", 0, key="a"), Task("train", 1, key="b")], group_size=4, signal="binary",
                                gamma=gamma)
    s = f = 0.0
    for rewards in groups:
        sampler.update("a", rewards)
        s, f = gamma * s + sum(rewards), gamma * f + (4 - sum(rewards))
    prior = gamma ** len(groups)
    p = (prior + s) / (2 * prior + s + f)
    metrics = sampler.key_metrics()["a"]
    assert metrics["p"] == pytest.approx(p)
    assert metrics["weight"] == pytest.approx(1 - p**4 - (1 - p) ** 4 + 0.02)
