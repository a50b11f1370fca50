"""signal="calibrated" (the default of 2026-12-03 to 12-05): the frontier weight, lowered where a key's groups give less signal than the
binomial formula predicts (observed over predicted, with a fading prior); never raised above frontier."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.samplers import CurriculumSampler
from openenv_prime.samplers.signals import CALIBRATION_PRIOR, FULL_RATIO
from sampler_helpers import binary_group_st, make_pool

FAST = settings(max_examples=80, deadline=None)


def _key(sampler, key="k0"):
    m = sampler.metrics()
    return m[f"key/{key}/p"], m[f"key/{key}/signal"], m[f"key/{key}/weight"]


def _pair(**kwargs):
    tasks = make_pool([1, 1])
    return CurriculumSampler(tasks, signal="calibrated", **kwargs), CurriculumSampler(tasks, signal="frontier", **kwargs)


def test_a_key_whose_groups_never_differ_loses_its_weight_by_the_ratio_rule():
    calibrated, frontier = _pair()
    predicted = 0.0
    for n in range(1, 5):
        p_before = calibrated.success_rate("k0")
        predicted = 0.9 * predicted + (1 - p_before**8 - (1 - p_before) ** 8)
        for sampler in (calibrated, frontier):
            sampler.update("k0", [0.0] * 8)
        prior = CALIBRATION_PRIOR * 0.9**n
        ratio = prior / (prior + predicted)  # no group had signal
        p, signal, weight = _key(calibrated)
        fp, fsignal, fweight = _key(frontier)
        assert p == fp and signal == pytest.approx(fsignal * ratio)
        assert weight == pytest.approx(fsignal * ratio / FULL_RATIO + 0.005)
        assert weight < fweight
    assert weight < 0.2 * fweight  # four groups of 0 of 8: a tier out of reach keeps under a fifth of frontier's weight


def test_a_key_whose_groups_give_the_predicted_signal_keeps_the_frontier_weight():
    calibrated, frontier = _pair()
    for _ in range(12):
        for sampler in (calibrated, frontier):
            sampler.update("k0", [1.0, 0.0] * 4)  # every group differs: at least the predicted signal
    assert _key(calibrated) == _key(frontier)


@FAST
@given(groups=st.lists(binary_group_st, max_size=30), group_size=st.integers(2, 16))
def test_calibrated_never_weighs_or_predicts_above_frontier_and_keeps_the_floor(groups, group_size):
    calibrated, frontier = _pair(group_size=group_size)
    for rewards in groups:
        calibrated.update("k0", rewards)
        frontier.update("k0", rewards)
    (p, signal, weight), (fp, fsignal, fweight) = _key(calibrated), _key(frontier)
    assert p == fp
    assert signal <= fsignal + 1e-12 and weight <= fweight + 1e-12
    assert weight >= calibrated.epsilon


def test_a_state_saved_before_the_expected_column_loads_with_the_prior_alone():
    sampler = CurriculumSampler(make_pool([1, 1]), signal="frontier")
    for _ in range(3):
        sampler.update("k0", [0.0] * 8)
    state = json.loads(json.dumps(sampler.state_dict()))
    del state["curriculum"]["expected"]  # as saved before this column existed
    loaded = CurriculumSampler(make_pool([1, 1]), signal="frontier")
    loaded.load_state_dict(state)
    assert loaded.state_dict()["curriculum"]["expected"] == [0.0, 0.0]
    assert _key(loaded) == _key(sampler)  # frontier does not read it


def test_a_state_with_a_bad_expected_column_is_refused_and_nothing_changes():
    sampler = CurriculumSampler(make_pool([1, 1]))
    sampler.update("k0", [0.0] * 8)
    state = sampler.state_dict()
    state["curriculum"]["expected"] = [1.0]  # one value for two keys
    fresh = CurriculumSampler(make_pool([1, 1]))
    before = fresh.state_dict()
    with pytest.raises(ValueError, match="curriculum.expected"):
        fresh.load_state_dict(state)
    assert fresh.state_dict() == before
