"""The verifiers taskset never shows the model a gold answer: the gold server (tests/play/gold_server.py) puts it in
its task specs and in every shape we know of in its observations and tool results; every message the scripted model
receives, system and user, every turn, is searched for it."""

from __future__ import annotations

import asyncio

import pytest

from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer
from tests.play.gold_server import GOLD, TASKS, gold_in, gold_serving
from tests.play.players import gold_rule, prompt_texts, user_texts
from tests.verifiers_taskset.helpers import make_env, run_episodes


@pytest.fixture(scope="module", params=["fields", "tools"])
def gold_server(request, tmp_path_factory):
    with gold_serving(request.param, tmp_path_factory.mktemp("gold")) as url:
        yield request.param, url


def test_taskset_episodes_never_show_the_model_a_gold_answer(gold_server):
    kind, url = gold_server
    server = ScriptedOpenAIServer(gold_rule(tools=kind == "tools"))
    with server as model_url:
        env = make_env(url, family_field="level", max_steps=4)
        tasks = list(env.taskset)
        episodes = asyncio.run(run_episodes(env, tasks, model_url))
    assert [t.data.spec["answer"] for t in tasks] == GOLD  # the specs hold the answers; the prompts must not
    texts = prompt_texts(server.requests)
    assert gold_in(texts) == []
    assert all(any(task["question"] in text for text in texts) for task in TASKS)
    assert any(len(user_texts(request)) >= 2 for request in server.requests)
    assert [e.traces[0].reward for e in episodes] == [1.0] * len(GOLD)
