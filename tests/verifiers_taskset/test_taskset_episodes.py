"""Episodes of the OpenEnv taskset against the real chain_sum server and a scripted model."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openenv_prime.client.engine.rewards import aggregate
from openenv_prime.envs.launch import local_server
from openenv_prime.testing.scripted_openai import (
    ScriptedOpenAIServer,
    chain_sum_rule,
    chain_sum_terms,
    fixed,
    last_user_text,
)
from tests.verifiers_taskset.conftest import CORRECT_TIERS
from tests.verifiers_taskset.helpers import by_tier, make_env, reward_of, run_episodes


def _run(env, tasks, model_url, **kwargs):
    return asyncio.run(run_episodes(env, tasks, model_url, **kwargs))


def _record(episode) -> dict:
    (trace,) = episode.traces
    return trace.info["openenv"]


def test_rewards_follow_the_environment_per_tier(chain_sum_server, chain_sum_tasks, scripted_model):
    env = make_env(chain_sum_server, splits=["test"])
    tasks = by_tier(chain_sum_tasks, 3)
    episodes = _run(env, tasks, scripted_model.url)
    assert len(episodes) == 15
    for task, episode in zip(tasks, episodes):
        (trace,) = episode.traces
        expected = 1.0 if int(task.data.family) in CORRECT_TIERS else 0.0
        assert episode.ok and episode.task.key == task.key
        assert trace.reward == expected
        assert trace.info["openenv"]["rewards"] == [expected]
        assert trace.metrics == {"openenv_steps": 1.0, "openenv_done": 1.0, "openenv_invalid_actions": 0.0}
        assert trace.stop_condition == "openenv_done"
    # The model saw the question under the generated instructions, one request per episode.
    seen = scripted_model.requests[-15:]
    assert all(r["messages"][0]["role"] == "system" and "answer" in r["messages"][0]["content"] for r in seen)
    assert all(chain_sum_terms(last_user_text(r)) for r in seen)


def test_rollouts_of_one_task_are_separate_episodes(chain_sum_server, chain_sum_tasks, scripted_model):
    env = make_env(chain_sum_server, splits=["test"])
    episodes = _run(env, chain_sum_tasks[:2], scripted_model.url, rollouts=3)
    assert [e.task.key for e in episodes] == [chain_sum_tasks[0].key] * 3 + [chain_sum_tasks[1].key] * 3
    assert len({e.traces[0].id for e in episodes}) == 6
    assert all(reward_of(e) == 1.0 for e in episodes)


def test_invalid_actions_are_fed_back_then_stop_the_episode(chain_sum_server, chain_sum_tasks, scripted_model):
    # `answr` is not a field of chain_sum's action: every reply fails the schema check before it is sent.
    env = make_env(chain_sum_server, splits=["test"], action_field="answr", max_invalid_actions=2)
    before = len(scripted_model.requests)
    (episode,) = _run(env, chain_sum_tasks[:1], scripted_model.url)
    (trace,) = episode.traces
    assert episode.ok and trace.reward == 0.0
    assert trace.stop_condition == "openenv_invalid_action"
    assert trace.metrics["openenv_invalid_actions"] == 3.0 and trace.metrics["openenv_steps"] == 0.0
    requests = scripted_model.requests[before:]
    assert len(requests) == 3
    feedback = last_user_text(requests[1])
    assert "not a valid action" in feedback and "'answr' was unexpected" in feedback and "'answer' is a required" in feedback


def test_an_empty_reply_is_fed_back_and_the_episode_recovers(chain_sum_server, chain_sum_tasks):
    def empty_then_right(request):
        users = [m for m in request["messages"] if m["role"] == "user"]
        if len(users) == 1:
            return ""
        return str(sum(chain_sum_terms(users[0]["content"])))

    with ScriptedOpenAIServer(empty_then_right) as model_url:
        (episode,) = _run(make_env(chain_sum_server, splits=["test"]), chain_sum_tasks[-1:], model_url)
    (trace,) = episode.traces
    assert trace.reward == 1.0 and trace.metrics["openenv_invalid_actions"] == 1.0
    assert trace.stop_condition == "openenv_done"


@pytest.mark.parametrize(
    ("reply", "stop", "invalid"),
    [
        ("", "openenv_invalid_action", 4.0),
        ("   \n", "openenv_invalid_action", 4.0),
        ("I don't know", "openenv_done", 0.0),
        ("-0x1F", "openenv_done", 0.0),
        ("9" * 200_000, "openenv_done", 0.0),
    ],
    ids=["empty", "blank", "words", "not-decimal", "huge"],
)
def test_bad_replies_score_zero_without_failing(chain_sum_server, chain_sum_tasks, reply, stop, invalid):
    with ScriptedOpenAIServer(fixed(reply)) as model_url:
        episodes = _run(make_env(chain_sum_server, splits=["test"]), chain_sum_tasks[:2], model_url)
    for episode in episodes:
        (trace,) = episode.traces
        assert episode.ok, episode.errors
        assert trace.reward == 0.0 and trace.stop_condition == stop
        assert trace.metrics["openenv_invalid_actions"] == invalid


def test_capped_server_serves_64_concurrent_episodes(chain_sum_tasks):
    tasks = by_tier(chain_sum_tasks, 4)  # 20 tasks x 3 rollouts + 4 more = 64 episodes
    with local_server("chain-sum", tiers=5, max_sessions=4) as url, ScriptedOpenAIServer(
        chain_sum_rule(CORRECT_TIERS), delay=0.02
    ) as model_url:
        env = make_env(url, splits=["test"], capacity_wait=120.0)
        episodes = _run(env, tasks, model_url, rollouts=3, concurrency=64)
        episodes += _run(env, tasks[:4], model_url, concurrency=64)
    assert len(episodes) == 64
    assert all(e.ok for e in episodes), [e.errors for e in episodes if not e.ok][:1]
    expected = {t.key: float(int(t.data.family) in CORRECT_TIERS) for t in tasks}
    assert all(reward_of(e) == expected[e.task.key] for e in episodes)


def test_client_side_session_limit_keeps_under_the_server_cap(chain_sum_tasks):
    with local_server("chain-sum", tiers=5, max_sessions=2) as url, ScriptedOpenAIServer(
        chain_sum_rule(CORRECT_TIERS)
    ) as model_url:
        # A zero capacity wait fails any refused session: the client-side limit must prevent them all.
        env = make_env(url, splits=["test"], max_sessions=2, capacity_wait=0.0)
        tasks = by_tier(chain_sum_tasks, 4)
        # Two runs of one env, each in its own event loop (as two `serving()`s would be).
        episodes = _run(env, tasks, model_url, concurrency=20) + _run(env, tasks[:4], model_url, concurrency=4)
    assert len(episodes) == 24
    assert all(e.ok for e in episodes), [e.errors for e in episodes if not e.ok][:1]


def test_other_harnesses_stay_selectable(chain_sum_server):
    env = make_env(chain_sum_server, player={"harness": {"id": "null"}})
    assert env.config.agent_harnesses()["player"].id == "null"
    assert make_env(chain_sum_server).config.agent_harnesses()["player"].id == "openenv-prime"


def test_reward_mode_and_clip(chain_sum_server, scripted_model):
    env = make_env(chain_sum_server, splits=["test"], task={"reward_mode": "max", "reward_clip": [0.0, 0.5]})
    (episode,) = _run(env, [next(iter(env.taskset))], scripted_model.url)
    assert reward_of(episode) == 0.5
    with pytest.raises(ValueError, match="low > high"):
        make_env(chain_sum_server, task={"reward_clip": [1.0, 0.0]})
    with pytest.raises(ValueError, match="may not set \\['index'\\]"):
        make_env(chain_sum_server, reset_kwargs={"index": 3})


def test_the_rule_keys_are_the_clients_split_between_taskset_and_task():
    """`--env.taskset.max-steps` and the other limits on the taskset, `--env.taskset.task.reward-mode` and
    `.reward-clip` on the task: the client's EpisodeLimits and RewardSettings, joined by `rules(task)`."""
    from openenv_prime.client.engine.episode_rules import EpisodeRules
    from openenv_prime.client.engine.episode_settings import EpisodeLimits, RewardSettings
    from openenv_prime.verifiers_taskset.config import OpenEnvTaskConfig, OpenEnvTasksetConfig

    assert issubclass(OpenEnvTasksetConfig, EpisodeLimits) and issubclass(OpenEnvTaskConfig, RewardSettings)
    assert not set(RewardSettings.model_fields) & set(OpenEnvTasksetConfig.model_fields)
    taskset = OpenEnvTasksetConfig(max_steps=5, invalid_flags=["bad"], task={"reward_mode": "last"})
    assert taskset.rules(OpenEnvTaskConfig(reward_mode="max", reward_clip=[0, 1])) == EpisodeRules(
        max_steps=5, reward_mode="max", reward_clip=(0.0, 1.0), invalid_flags=("bad",))


@given(st.lists(st.floats(-10, 10, allow_nan=False), max_size=20))
def test_aggregate_modes(rewards):
    if not rewards:
        assert aggregate(rewards, "sum") == aggregate(rewards, "last") == aggregate(rewards, "max") == 0.0
        return
    assert aggregate(rewards, "sum") == sum(rewards)
    assert aggregate(rewards, "last") == rewards[-1]
    assert aggregate(rewards, "max") == max(rewards)
