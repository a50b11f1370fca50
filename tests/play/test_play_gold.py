"""`openenv-prime eval` never shows the model a gold answer: the gold server puts it in every shape we know of
(top-level, camelCase, nested objects and lists, JSON strings, metadata, a whole task spec, MCP tool results), and
every prompt the scripted model receives, system and user, every turn, is searched for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_prime.evaluation import EvalConfig, OpenAIPolicy, run_eval
from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer
from tests.play.gold_server import GOLD, TASKS, gold_in
from tests.play.players import gold_rule, prompt_texts, user_texts
from tests.support.waiting import HANG_GUARD_S

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("kind", "version"), [("fields", "0.4.1"), ("tools", "0.4.1"), ("tools", "0.10.0")])
def test_eval_never_shows_the_model_a_gold_answer(play_servers, kind, version):
    url = play_servers("gold_server.py", version, kind)  # 0.10.0 also puts the metadata at the frame's top level
    server = ScriptedOpenAIServer(gold_rule(tools=kind == "tools"))
    with server as model_url:
        config = EvalConfig(base_url=url, family_field="level", per_family=2, max_steps=4)
        result = run_eval(config, OpenAIPolicy(model_url, "scripted"))
    texts = prompt_texts(server.requests)
    assert gold_in(texts) == []
    # not vacuous: the model saw the questions, played a second turn after an observation full of gold, and won
    assert all(any(task["question"] in text for text in texts) for task in TASKS)
    assert any(len(user_texts(request)) >= 2 for request in server.requests)
    assert [r.reward for r in result.results] == [1.0] * len(GOLD) and all(r.steps == 2 for r in result.results)


@pytest.mark.parametrize("kind", ["fields", "tools"])
def test_the_gold_server_shows_gold_when_nothing_is_hidden(play_servers, kind):
    """The check above can fail: with an empty hidden_fields list the same episodes show the gold answers."""
    url = play_servers("gold_server.py", "0.4.1", kind)
    server = ScriptedOpenAIServer(gold_rule(tools=kind == "tools"))
    with server as model_url:
        config = EvalConfig(base_url=url, family_field="level", per_family=2, max_steps=4, hidden_fields=[])
        run_eval(config, OpenAIPolicy(model_url, "scripted"))
    assert {gold for gold, _ in gold_in(prompt_texts(server.requests))} == set(GOLD)


def test_a_template_that_names_a_gold_field_is_refused_before_the_eval(play_servers, tmp_path):
    url = play_servers("gold_server.py", "0.4.1", "fields")
    env = dict(os.environ, COLUMNS="200", PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-m", "openenv_prime", "eval", "--base-url", url, "--model", "m",
                          "--model-base-url", "http://127.0.0.1:9/v1", "--observation-template",
                          "{question} (hint: {task_spec[answer]})", "--out", str(tmp_path / "r.json")],
                         capture_output=True, text=True, timeout=HANG_GUARD_S, env=env, cwd=ROOT)
    assert run.returncode == 2
    assert "names 'answer', a field that may hold the answer" in run.stderr and "--hidden-fields" in run.stderr
    assert not (tmp_path / "r.json").exists()
