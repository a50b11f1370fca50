"""One budget for the whole prompt, in `openenv-prime eval` and the verifiers taskset, over long episodes of the
coding_env-like server (tests/play/coding_server.py) whose every failing program returns a long traceback: no prompt
is over the budget, the task and the newest observation are always in it, and it says how many turns it left out."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from openenv_prime.client.prompts.budget import prompt_size
from openenv_prime.evaluation import EvalConfig, OpenAIPolicy, run_eval
from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer
from tests.play.coding_server import TASKS
from tests.play.players import user_texts
from tests.verifiers_taskset.helpers import make_env, run_episodes

BUDGET = 8000
STEPS = 12
LEFT_OUT = re.compile(r"\[(\d+) earlier turns? left out\]")
RULES = {"max_steps": STEPS, "max_invalid_actions": STEPS, "prompt_budget": BUDGET}


@pytest.fixture
def coding_server(play_servers):
    return play_servers("coding_server.py", "0.4.1")


def turn_of(request: dict[str, Any]) -> int:
    """How many replies came before this request: those in it and those its note says were left out."""
    replies = sum(m["role"] == "assistant" for m in request["messages"])
    note = LEFT_OUT.search(user_texts(request)[0])
    return replies + (int(note.group(1)) if note else 0)


def failing_program(request: dict[str, Any]) -> str:
    """A program that prints its turn, then fails: a traceback of about 1,300 characters, as coding_env's were."""
    return f"print('turn {turn_of(request)}')\nraise RuntimeError('it failed: ' + 'no luck ' * 150)"


def check_prompts(requests: list[dict[str, Any]]) -> None:
    """Every prompt within the budget, opening with its task, ending with the newest observation; some left turns out."""
    assert requests and max(prompt_size(r["messages"]) for r in requests) <= BUDGET
    assert max(turn_of(r) for r in requests) == STEPS - 1
    for request in requests:
        users = user_texts(request)
        assert any(users[0].startswith(task["prompt"]) for task in TASKS)
        turn = turn_of(request)
        if turn:
            assert f"turn {turn - 1}" in users[-1] and "RuntimeError: it failed" in users[-1]
    assert any(LEFT_OUT.search(user_texts(r)[0]) for r in requests)


def test_eval_keeps_every_prompt_of_a_long_episode_within_the_budget(coding_server):
    server = ScriptedOpenAIServer(failing_program)
    with server as model_url:
        result = run_eval(EvalConfig(base_url=coding_server, per_family=1, **RULES), OpenAIPolicy(model_url, "scripted"))
    assert [r.steps for r in result.results] == [STEPS, STEPS] and all(r.stop == "max_steps" for r in result.results)
    check_prompts(server.requests)


def test_the_taskset_keeps_every_prompt_of_a_long_episode_within_the_budget(coding_server):
    server = ScriptedOpenAIServer(failing_program)
    with server as model_url:
        env = make_env(coding_server, family_field="tier", check_reset=False, **RULES)
        tasks = list(env.taskset)[:2]
        episodes = asyncio.run(run_episodes(env, tasks, model_url))
    assert [e.traces[0].metrics["openenv_steps"] for e in episodes] == [STEPS, STEPS]
    check_prompts(server.requests)
