"""The episode rules as config keys (client/engine/episode_settings.py): declared once, inherited by the eval's and the trainer's
configs (the verifiers taskset's is checked in tests/verifiers_taskset), checked when the config is read."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from openenv_prime.client.engine.episode_rules import DEFAULT_RULES, REWARD_MODES
from openenv_prime.client.engine.episode_settings import EpisodeLimits, EpisodeSettings, ResetArguments, RewardSettings
from openenv_prime.evaluation import EvalConfig
from openenv_prime.mlx_trainer.config import EnvironmentConfig

RULE_KEYS = ("max_steps", "max_invalid_actions", "reward_mode", "reward_clip", "invalid_flags", "invalid_flags_in_state",
             "invalid_errors")


def declared_in(cls: type, name: str) -> list[str]:
    """The classes of ``cls``'s MRO that declare the field ``name`` themselves."""
    return [base.__name__ for base in cls.__mro__ if name in vars(base).get("__annotations__", {})]


@pytest.mark.parametrize("config", [EvalConfig, EnvironmentConfig, EpisodeSettings])
def test_every_rule_key_is_declared_once_and_the_defaults_are_the_rules(config):
    assert set(RULE_KEYS) == set(EpisodeSettings.model_fields)
    for name in RULE_KEYS:
        assert declared_in(config, name) in (["EpisodeLimits"], ["RewardSettings"]), name
    assert config().rules() == DEFAULT_RULES


@given(
    max_steps=st.integers(1, 64), max_invalid_actions=st.integers(0, 8), reward_mode=st.sampled_from(REWARD_MODES),
    clip=st.none() | st.tuples(st.floats(-5, 5), st.floats(0, 5)).map(lambda c: (c[0], c[0] + c[1])),
    flags=st.lists(st.text("abc_", min_size=1), max_size=3), in_state=st.booleans(), errors=st.booleans(),
)
def test_rules_carry_every_key(max_steps, max_invalid_actions, reward_mode, clip, flags, in_state, errors):
    settings = EvalConfig(max_steps=max_steps, max_invalid_actions=max_invalid_actions, reward_mode=reward_mode,
                          reward_clip=clip, invalid_flags=flags, invalid_flags_in_state=in_state,
                          invalid_errors=errors)
    rules = settings.rules()
    assert (rules.max_steps, rules.max_invalid_actions, rules.reward_mode, rules.reward_clip, rules.invalid_flags,
            rules.invalid_flags_in_state, rules.invalid_errors) == (
        max_steps, max_invalid_actions, reward_mode, clip, tuple(flags), in_state, errors)


@pytest.mark.parametrize(("fields", "named"), [
    ({"max_steps": 0}, "max_steps"), ({"max_invalid_actions": -1}, "max_invalid_actions"),
    ({"reward_mode": "mean"}, "reward_mode"), ({"reward_clip": (1.0, 0.0)}, "low > high"),
    ({"invalid_flags": "invalid_move"}, "invalid_flags"),
])
@pytest.mark.parametrize("config", [EvalConfig, EnvironmentConfig])
def test_bad_rule_keys_fail_when_the_config_is_read(config, fields, named):
    with pytest.raises(ValidationError, match=named):
        config(**fields)


def test_the_limits_and_the_reward_rule_can_be_read_apart():
    """The verifiers taskset keeps its reward rule on the task (`--env.taskset.task.*`), its limits on the taskset."""
    assert set(EpisodeLimits.model_fields) | set(RewardSettings.model_fields) == set(RULE_KEYS)
    assert not set(EpisodeLimits.model_fields) & set(RewardSettings.model_fields)


def test_reserved_reset_arguments_are_refused_with_the_consumers_advice():
    class Consumer(ResetArguments):
        reset_choices = "use --pick instead"

    assert Consumer(reset_kwargs={"seed": 3}).reset_kwargs == {"seed": 3}
    with pytest.raises(ValidationError, match=r"may not set \['episode_id', 'split'\].*use --pick instead"):
        Consumer(reset_kwargs={"split": "test", "episode_id": "x", "seed": 3})
    with pytest.raises(ValidationError, match=r"may not set \['index'\].*--split"):
        EvalConfig(reset_kwargs={"index": 1})
