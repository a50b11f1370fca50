"""Multi-step episodes, JSON-object actions, step limits and reward aggregation, on a small real
OpenEnv server (`guess_server.py`: guess a number from 1 to 6, -0.25 per miss, 1.0 on the hit). Its optional `note`
(default "") is a setting the model is not offered unless `action_fields` names it; these tests name it, so replies
are JSON objects."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer, fixed
from tests.support.processes import free_port, serving
from tests.verifiers_taskset.helpers import make_env, run_episodes, system_text

SERVER = Path(__file__).with_name("guess_server.py")


@pytest.fixture(scope="module")
def guess_server(tmp_path_factory):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = tmp_path_factory.mktemp("guess") / "server.log"
    with serving([sys.executable, str(SERVER), str(port), "16"], f"{url}/health", log_path):
        yield url


def counting(request):
    """Guesses 1, 2, 3, ... : the n-th user message gets guess n, as a JSON object."""
    turn = sum(1 for m in request["messages"] if m["role"] == "user")
    return json.dumps({"guess": turn, "note": "counting"})


def _episodes(url, model_url, **taskset):
    taskset = {"family_field": "level", "check_reset": False, "action_fields": ["note"], **taskset}  # all start alike
    env = make_env(url, **taskset)
    tasks = list(env.taskset)
    return tasks, asyncio.run(run_episodes(env, tasks, model_url))


def test_multistep_rewards_sum_per_step_and_json_actions(guess_server):
    server = ScriptedOpenAIServer(counting)
    with server as model_url:
        tasks, episodes = _episodes(guess_server, model_url, family_field="level", observation_field="feedback")
    assert [t.key for t in tasks] == [f"guess/test/guess-{t}" for t in range(1, 7)]
    assert [t.data.family for t in tasks] == ["1", "0", "1", "0", "1", "0"]
    system = system_text(server.requests[0])
    assert "JSON object" in system and '- "note" (string, optional, default "")' in system
    assert all(system_text(r) == system for r in server.requests)  # the same system prompt on every turn
    for target, episode in enumerate(episodes, start=1):
        (trace,) = episode.traces
        record = trace.info["openenv"]
        assert episode.ok and trace.stop_condition == "openenv_done"
        assert record["rewards"] == [-0.25] * (target - 1) + [1.0]
        assert trace.reward == pytest.approx(1.0 - 0.25 * (target - 1))
        assert trace.metrics["openenv_steps"] == target
    first_turns = [r["messages"][1]["content"] for r in server.requests if len(r["messages"]) == 2]
    assert first_turns == ["Guess a number from 1 to 6."] * 6


@pytest.mark.parametrize(
    ("task", "expected"),
    [({"reward_mode": "last"}, [1.0, 1.0, -0.25, -0.25]),
     ({"reward_mode": "max", "reward_clip": [0.0, 1.0]}, [1.0, 1.0, 0.0, 0.0]),
     ({"reward_mode": "sum"}, [1.0, 0.75, -0.75, -0.75])],
    ids=["last", "max-clipped", "sum"],
)
def test_max_steps_and_reward_modes(guess_server, task, expected):
    with ScriptedOpenAIServer(counting) as model_url:
        tasks, episodes = _episodes(guess_server, model_url, max_steps=3, task=task)
    got = {t.data.spec["target"]: e.traces[0] for t, e in zip(tasks, episodes)}
    assert [got[t].reward for t in (1, 2, 5, 6)] == pytest.approx(expected)
    assert got[5].stop_condition == "openenv_max_steps" and got[5].metrics["openenv_done"] == 0.0
    assert got[5].metrics["openenv_steps"] == 3.0


def test_a_reply_that_is_no_action_is_invalid_and_fed_back(guess_server):
    server = ScriptedOpenAIServer(fixed("three"))  # no JSON object, and no value of the one required field either
    with server as model_url:
        _, episodes = _episodes(guess_server, model_url, max_invalid_actions=1)
    for episode in episodes:
        (trace,) = episode.traces
        assert episode.ok and trace.stop_condition == "openenv_invalid_action"
        assert trace.metrics["openenv_invalid_actions"] == 2.0 and trace.reward == 0.0
    feedback = [r["messages"][-1]["content"] for r in server.requests if len(r["messages"]) == 4]
    assert feedback and all("not a valid action" in text for text in feedback)


def test_a_setting_with_a_default_is_not_offered_and_a_bare_value_is_the_action(guess_server):
    server = ScriptedOpenAIServer(fixed("3"))
    with server as model_url:
        tasks, episodes = _episodes(guess_server, model_url, action_fields=[], max_steps=2)
    system = system_text(server.requests[0])
    assert "note" not in system and "Reply with only a JSON value (integer) for the action's `guess` field." in system
    rewards = {t.data.spec["target"]: e.traces[0].info["openenv"]["rewards"] for t, e in zip(tasks, episodes)}
    assert rewards[3] == [1.0] and rewards[1] == [-0.25, -0.25]
    assert all(e.traces[0].metrics["openenv_invalid_actions"] == 0 for e in episodes)
