"""Environments shaped like wildfire, snake, openspiel's catch and textarena (tests/play/lookalike_envs.py) played
through `openenv-prime eval` by scripted policies that read only the prompt: the legal values they use are the ones the
prompt states (in the system prompt from the action's docstring, or with the observation), every reply is a valid
action, each turn-1 prompt is within the observation budget, and no text is shown twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_prime.client.prompts.observations import DEFAULT_BUDGET
from openenv_prime.evaluation import EvalConfig, OpenAIPolicy, run_eval
from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer
from tests.play.players import catch_rule, fire_rule, guess_rule, snake_rule, system_text, user_texts
from tests.support.waiting import HANG_GUARD_S

ROOT = Path(__file__).resolve().parents[2]
CATCH_TEMPLATE = "Legal actions: {legal_actions}\n{info_state:grid=5}"
CASES = {  # environment -> (policy, template, reward of each task)
    "fire": (fire_rule, None, 2.0),
    "snake": (snake_rule, None, 0.06),
    "catch": (catch_rule, CATCH_TEMPLATE, 1.0),
    "guess": (guess_rule, None, 1.0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_policy_that_reads_only_the_prompt_plays_without_invalid_actions(play_servers, name):
    rule, template, reward = CASES[name]
    url = play_servers("lookalike_envs.py", "0.4.1", name)
    server = ScriptedOpenAIServer(rule)
    with server as model_url:
        config = EvalConfig(base_url=url, family_field="level", per_family=2, max_steps=10, observation_template=template,
                            success_threshold=reward - 1e-6, check_reset=name != "guess")  # (its tasks start alike)
        result = run_eval(config, OpenAIPolicy(model_url, "scripted"))
    assert [(r.done, r.invalid_actions) for r in result.results] == [(True, 0)] * 4
    assert [r.reward for r in result.results] == pytest.approx([reward] * 4)
    first = [request for request in server.requests if len(user_texts(request)) == 1]
    assert len(first) == 4
    for request in first:
        assert len(system_text(request)) + len(user_texts(request)[0]) <= DEFAULT_BUDGET


def test_what_each_lookalike_shows_at_turn_one(play_servers):
    """The texts themselves: the legal values from the docstrings, grids instead of flat lists, tensors summarised,
    the configuration fields of the action left out, each text once."""
    seen = {}
    for name, (rule, template, _) in CASES.items():
        server = ScriptedOpenAIServer(rule)
        with server as model_url:
            config = EvalConfig(base_url=play_servers("lookalike_envs.py", "0.4.1", name), family_field="level",
                                per_family=1, families=["0"], max_steps=1, observation_template=template,
                                check_reset=name != "guess")
            run_eval(config, OpenAIPolicy(model_url, "scripted"))
        seen[name] = (system_text(server.requests[0]), user_texts(server.requests[0])[0])

    system, user = seen["fire"]
    assert 'action: "break" (cut a firebreak), "water" (drop water), "wait"' in system  # the class docstring
    assert '- "action" (string, one of "break", "water", "wait" as the description says, required)' in system
    assert '- "x" (integer, optional, default null)' in system and "A bare value fills \"action\" alone" in system
    assert user.startswith("grid (32 rows x 32 columns; counts: 1 x1022, 2 x2):\n1 1 1")
    assert len([line for line in user.splitlines() if len(line.split()) == 32]) == 32
    assert "\nwidth: 32\nheight: 32\n" in user and "[" not in user  # no flat list anywhere

    system, user = seen["snake"]
    assert "0 = keep going (straight on)" in system and "3 = down" in system  # both steering modes, as written
    assert "Reply with only a JSON value (integer) for the action's `action` field." in system
    assert "observation: a 20x20x8 array of numbers from 0 to 1" in user and "summarised, not shown" in user
    assert "5 at (row, column): (10, 10)" in user  # the head, found without reading 400 cells

    system, user = seen["catch"]
    assert "action_id" in system and "game_name" not in system and "game_params" not in system
    assert user.splitlines()[0] == "Legal actions: [0, 1, 2]" and len(user.splitlines()) == 11

    system, user = seen["guess"]
    assert system == (  # free text: what the action's docstring says, and that the reply is sent as written
        "Solve the task. Reply with only the final answer, nothing else.\n\nThe environment describes its action:\n"
        "The player's message to the game.\n\nYour reply is sent, as written, as the action's `message` field."
    )
    assert user.count("Guess The Number") == 1  # the prompt, not again from the raw messages
    assert "PROMPT" not in user and "raw_messages" not in user and "env_id" not in user


def test_the_eval_cli_takes_the_prompt_settings(play_servers, tmp_path):
    """--observation-template (\\n as typed in a shell is a line break), --observation-budget and --hidden-fields
    reach the episodes, and the report records them."""
    url = play_servers("lookalike_envs.py", "0.4.1", "snake")
    server = ScriptedOpenAIServer(snake_rule)
    out = tmp_path / "snake.json"
    with server as model_url:
        run = subprocess.run(
            [sys.executable, "-m", "openenv_prime", "eval", "--base-url", url, "--model", "scripted",
             "--model-base-url", model_url, "--family-field", "level", "--per-family", "1", "--out", str(out),
             "--observation-template", r"Score {episode_score}.\n{grid:grid}", "--observation-budget", "300",
             "--hidden-fields", "answer"],
            capture_output=True, text=True, timeout=HANG_GUARD_S, env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT,
        )
    assert run.returncode == 0, run.stderr
    config = json.loads(out.read_text())["config"]
    assert config["observation_template"] == "Score {episode_score}.\n{grid:grid}"
    assert config["observation_budget"] == 300 and config["hidden_fields"] == ["answer"]
    first = user_texts(server.requests[0])[0]
    assert first.startswith("Score 0.0.\n2 2 2 2") and "[... " in first and len(first) <= 300  # 20 rows: cut
