"""Episode rewards (missing step rewards left out, never zero) and the capped per-key sampler metrics."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openenv_prime.client.engine.rewards import aggregate, episode_reward
from openenv_prime.mlx_trainer.report.metrics import sampler_log_metrics
from openenv_prime.samplers import CurriculumSampler, Task

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


def _sampler(draws: dict[str, int]) -> CurriculumSampler:
    """A curriculum over ``draws``'s keys (one task each) whose draw counts are ``draws``."""
    sampler = CurriculumSampler([Task("train", i, key) for i, key in enumerate(draws)], group_size=2)
    state = sampler.state_dict()
    state["stats"]["draws"] = list(draws.values())
    sampler.load_state_dict(state)
    sampler.update(next(iter(draws)), [1.0, 0.0])
    return sampler


def test_logged_sampler_metrics_keep_totals_and_the_most_drawn_keys():
    sampler = _sampler({"a": 1, "b": 6, "c/x": 3})
    logged = sampler_log_metrics(sampler, 2)
    assert {k: logged[k] for k in sampler.metrics(per_key=False)} == sampler.metrics(per_key=False)
    assert logged["keys_total"] == 3.0 and logged["keys_logged"] == 2.0
    assert {k.rsplit("/", 1)[0] for k in logged if k.startswith("key/")} == {"key/b", "key/c/x"}
    assert logged["key/c/x/draw_share"] == 0.3 and logged["key/b/p"] == sampler.success_rate("b")
    assert all(logged[k] == v for k, v in sampler.metrics().items() if k.startswith(("key/b/", "key/c/x/")))


@given(st.dictionaries(st.text("abc/", min_size=1, max_size=4), st.integers(0, 50), min_size=1, max_size=12),
       st.integers(0, 15))
def test_logged_sampler_metrics_never_exceed_the_cap(draws, n):
    logged = sampler_log_metrics(_sampler(draws), n)
    kept = {k for k in draws if f"key/{k}/draw_share" in logged}
    assert len(kept) == min(n, len(draws)) == logged["keys_logged"]
    assert all(draws[k] >= draws[o] for k in kept for o in set(draws) - kept)
