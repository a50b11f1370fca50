"""Episode rewards (missing step rewards left out, never zero) and the capped per-key sampler metrics."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openenv_prime.mlx_trainer.metrics import cap_key_metrics
from openenv_prime.client.rewards import aggregate, episode_reward

rewards = st.lists(st.one_of(st.none(), st.floats(-10, 10, allow_nan=False)), max_size=8)


@given(rewards, st.booleans(), st.sampled_from(["sum", "last", "max"]))
def test_missing_step_rewards_change_nothing(step_rewards, ended_by_env, mode):
    scored = [r for r in step_rewards if r is not None]
    value = episode_reward(step_rewards, ended_by_env, mode, None)
    if scored:
        assert value == aggregate(scored, mode)
    elif ended_by_env:
        assert value is None  # the environment ended it without a reward: left out, not 0.0
    else:
        assert value == 0.0  # cut off by the trainer (max_steps, invalid actions) with nothing earned


def test_modes_and_clip():
    assert episode_reward([None, 0.25, 0.5], True, "sum", None) == 0.75
    assert episode_reward([0.25, None, 0.5], True, "last", None) == 0.5
    assert episode_reward([0.25, 0.75, None], False, "max", None) == 0.75
    assert episode_reward([1.0, 1.0], True, "sum", (0.0, 1.0)) == 1.0
    assert episode_reward([None], True, "sum", (0.0, 1.0)) is None
    assert episode_reward([None], False, "sum", (0.5, 1.0)) == 0.5
    with pytest.raises(ValueError, match="reward_mode"):
        aggregate([1.0], "mean")


def _metrics(draws: dict[str, float]) -> dict[str, float]:
    out = {"draws": 10.0, "groups": 4.0}
    for key, share in draws.items():
        out[f"key/{key}/draw_share"] = share
        out[f"key/{key}/episodes"] = 1.0
    return out


def test_capped_metrics_keep_totals_and_the_most_drawn_keys():
    capped = cap_key_metrics(_metrics({"a": 0.1, "b": 0.6, "c/x": 0.3}), 2)
    assert capped["draws"] == 10.0 and capped["groups"] == 4.0
    assert capped["keys_total"] == 3.0 and capped["keys_logged"] == 2.0
    assert {k.rsplit("/", 1)[0] for k in capped if k.startswith("key/")} == {"key/b", "key/c/x"}
    assert capped["key/c/x/episodes"] == 1.0


@given(st.dictionaries(st.text("abc/", min_size=1, max_size=4), st.floats(0, 1), max_size=12), st.integers(0, 15))
def test_capped_metrics_never_exceed_the_cap(draws, n):
    capped = cap_key_metrics(_metrics(draws), n)
    kept = {k[len("key/"):].rpartition("/")[0] for k in capped if k.startswith("key/")}
    assert len(kept) == min(n, len(draws)) == capped["keys_logged"]
    assert all(draws[k] >= draws[o] for k in kept for o in set(draws) - kept)
