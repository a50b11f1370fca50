"""A free-text action that is code (tests/play/coding_server.py, shaped like OpenEnv's coding_env): the prompt says
what the reply is, from the action class's description and the field's, in `openenv-prime eval` and the verifiers
taskset; a policy that writes code only when the prompt asks for it solves every task. A reply the environment runs
and reports as failed (a SyntaxError traceback with exit code 1) counts as an invalid action; a correct one does not."""

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
    assert len(tasks) == len(TASKS) and tasks[0].data.system_prompt is None  # each episode's first turn carries it
    assert [e.traces[0].reward for e in episodes] == [1.0] * len(TASKS)
    assert all(all(part in system_text(req) for part in TOLD) for req in server.requests)


@pytest.mark.parametrize("invalid_errors", [True, False])
def test_a_program_that_does_not_parse_is_an_invalid_action(coding_server, invalid_errors):
    server = ScriptedOpenAIServer(prompt_reader(syntax_error_first=True))
    config = EvalConfig(base_url=coding_server, per_family=2, max_steps=4, invalid_errors=invalid_errors)
    with server as model_url:
        result = run_eval(config, OpenAIPolicy(model_url, "scripted"))
    # the traceback is what the model read next, and the corrected program solved the task
    assert all(r.reward == 1.0 and r.done and r.steps == 2 for r in result.results)
    assert [r.invalid_actions for r in result.results] == [1 if invalid_errors else 0] * len(TASKS)
    second_turns = [user_texts(req)[1] for req in server.requests if len(user_texts(req)) == 2]
    assert len(second_turns) == len(TASKS) and all("SyntaxError" in text for text in second_turns)


def test_the_taskset_counts_a_program_that_does_not_parse_as_invalid(coding_server):
    with ScriptedOpenAIServer(prompt_reader(syntax_error_first=True)) as model_url:
        env = make_env(coding_server, family_field="tier", check_reset=False, max_steps=4)
        episodes = asyncio.run(run_episodes(env, list(env.taskset), model_url))
    assert [e.traces[0].metrics["openenv_invalid_actions"] for e in episodes] == [1.0] * len(TASKS)
    assert [e.traces[0].reward for e in episodes] == [1.0] * len(TASKS)
