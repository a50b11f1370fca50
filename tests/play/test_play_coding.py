"""A free-text action that is code (tests/play/coding_server.py, shaped like OpenEnv's coding_env): the prompt says
what the reply is, from the action class's description and the field's, in `openenv-prime eval` and the verifiers
taskset; a policy that writes code only when the prompt asks for it solves every task."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openenv_prime.evaluation import EvalConfig, OpenAIPolicy, run_eval
from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer
from tests.play.coding_server import ANSWERS, PROGRAMS, TASKS
from tests.play.players import user_texts
from tests.verifiers_taskset.helpers import make_env, run_episodes

TOLD = ("Represents a single code execution request.", "as the action's `code` field: Python code to execute; "
        "what it prints is its answer.")


@pytest.fixture
def coding_server(play_servers):
    return play_servers("coding_server.py", "0.4.1")


def system_text(request: dict[str, Any]) -> str:
    return next((m["content"] for m in request["messages"] if m["role"] == "system"), "")


def prompt_reader(syntax_error_first: bool = False):
    """Writes the task's program when the system prompt says the reply is code to execute, else the bare answer
    (what a model told nothing would try); ``syntax_error_first`` first sends a program that does not parse."""

    def rule(request: dict[str, Any]) -> str:
        users = user_texts(request)
        task = next(i for i, t in enumerate(TASKS) if t["prompt"] in users[0])
        if "code execution request" not in system_text(request) or "`code` field" not in system_text(request):
            return ANSWERS[task]
        if syntax_error_first and len(users) == 1:
            return PROGRAMS[task].replace(")", "", 1)
        return PROGRAMS[task]

    return rule


def test_eval_tells_the_model_its_reply_is_code_and_it_solves_every_task(coding_server):
    server = ScriptedOpenAIServer(prompt_reader())
    with server as model_url:
        result = run_eval(EvalConfig(base_url=coding_server, per_family=2, max_steps=2), OpenAIPolicy(model_url, "scripted"))
    assert len(result.results) == len(TASKS)
    assert all(r.reward == 1.0 and r.done and r.steps == 1 and r.invalid_actions == 0 for r in result.results)
    assert all(all(part in system_text(req) for part in TOLD) for req in server.requests)


def test_the_taskset_tells_the_model_its_reply_is_code_and_it_solves_every_task(coding_server):
    server = ScriptedOpenAIServer(prompt_reader())
    with server as model_url:
        env = make_env(coding_server, family_field="tier", check_reset=False, max_steps=2)
        tasks = list(env.taskset)
        episodes = asyncio.run(run_episodes(env, tasks, model_url))
    assert len(tasks) == len(TASKS) and all(part in tasks[0].data.system_prompt for part in TOLD)
    assert [e.traces[0].reward for e in episodes] == [1.0] * len(TASKS)
    assert all(all(part in system_text(req) for part in TOLD) for req in server.requests)
