"""signal="reach": calibrated, except that a key with no success in its decayed evidence has the
calibrated factor cubed, so a tier out of reach falls to the floor after one flat group; a key with a success
keeps calibrated's weight, and the predicted signal is calibrated's."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.samplers import CurriculumSampler
from openenv_prime.samplers.signals import UNREACHED_POWER, UNREACHED_SUCCESSES
from sampler_helpers import binary_group_st, make_pool

FAST = settings(max_examples=80, deadline=None)


def _key(sampler, key="k0"):
    m = sampler.metrics()
    return m[f"key/{key}/p"], m[f"key/{key}/signal"], m[f"key/{key}/weight"]


def _pair(tasks=None, **kwargs):
    tasks = tasks or make_pool([1, 1])
    return CurriculumSampler(tasks, signal="reach", **kwargs), CurriculumSampler(tasks, signal="calibrated", **kwargs)


def test_a_key_without_a_success_keeps_the_cube_of_the_calibrated_factor():
    reach, calibrated = _pair()
    for sampler in (reach, calibrated):
        sampler.update("k0", [0.0] * 8)
    (p, signal, weight), (cp, csignal, cweight) = _key(reach), _key(calibrated)
    assert (p, signal) == (cp, csignal)  # same estimates: only the weight differs
    binomial = 1 - (1 - p) ** 8 - p**8
    factor = (cweight - 0.005) / binomial
    assert 0.0 < factor < 0.25  # calibrated keeps about a sixth of the frontier weight
    assert weight == pytest.approx(binomial * factor**UNREACHED_POWER + 0.005)
    assert weight < 0.2 * cweight


def test_one_success_restores_the_calibrated_weight_until_it_fades():
    reach, calibrated = _pair()
    for rewards in ([0.0] * 8, [1.0] + [0.0] * 7):
        for sampler in (reach, calibrated):
            sampler.update("k0", rewards)
    assert _key(reach) == _key(calibrated)
    flat = 0
    while _key(reach) == _key(calibrated):  # the success decays by gamma per update of the key
        for sampler in (reach, calibrated):
            sampler.update("k0", [0.0] * 8)
        flat += 1
    assert 0.9**flat < UNREACHED_SUCCESSES <= 0.9 ** (flat - 1)
    assert _key(reach)[2] < _key(calibrated)[2]


@FAST
@given(groups=st.lists(binary_group_st, max_size=30), group_size=st.integers(2, 16))
def test_reach_never_weighs_above_calibrated_equals_it_with_a_success_and_keeps_the_floor(groups, group_size):
    reach, calibrated = _pair(group_size=group_size)
    for rewards in groups:
        reach.update("k0", rewards)
        calibrated.update("k0", rewards)
    (p, signal, weight), (cp, csignal, cweight) = _key(reach), _key(calibrated)
    assert (p, signal) == (cp, csignal)
    assert reach.epsilon <= weight <= cweight + 1e-12
    if not groups or reach.state_dict()["curriculum"]["successes"][0] >= UNREACHED_SUCCESSES:
        assert weight == cweight


def test_tiers_out_of_reach_take_a_smaller_share_of_draws_than_under_calibrated():
    """Three keys in reach (p 0.3-0.6) and six never solved, as in the real runs' testbed: the draws the six take."""
    p_of = [0.3, 0.45, 0.6, 0, 0, 0, 0, 0, 0]
    shares = {}
    for signal in ("reach", "calibrated"):
        sampler = CurriculumSampler(make_pool([20] * 9), signal=signal, seed=3)
        rng, dead = random.Random(5), 0
        for _ in range(128):
            task = sampler.sample(1)[0]
            tier = int(task.key[1:])
            dead += p_of[tier] == 0
            sampler.update(task, [1.0 if rng.random() < p_of[tier] else 0.0 for _ in range(8)])
        shares[signal] = dead / 128
    assert shares["reach"] < 0.5 * shares["calibrated"]
    assert shares["reach"] >= 6 / 128  # each dead key is still tried once
