"""`openenv-prime eval` (in-process and as the CLI) on the grid world and the MCP environment, with a scripted
OpenAI-compatible model that reads only what it is shown: rewards, keys, families and the texts it saw."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_prime.evaluation import EvalConfig, OpenAIPolicy, run_eval
from openenv_prime.evaluation.config import DEFAULT_SYSTEM_PROMPT
from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer
from tests.play.players import grid_rule, mcp_rule, user_texts
from tests.support.waiting import HANG_GUARD_S

ROOT = Path(__file__).resolve().parents[2]
GRID_TIERS = {"grid-a": 1, "grid-b": 1, "grid-c": 2, "grid-d": 2, "grid-e": 3, "grid-f": 3}


def _eval_cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="120", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "openenv_prime", "eval", *args], capture_output=True, text=True,
                          timeout=HANG_GUARD_S, env=env, cwd=ROOT)


def test_eval_walks_the_grid_world_after_a_blunder(grid_server):
    server = ScriptedOpenAIServer(grid_rule(blunder_first=True))
    with server as model_url:
        config = EvalConfig(base_url=grid_server, per_family=2, max_steps=8, success_threshold=0.5)
        result = run_eval(config, OpenAIPolicy(model_url, "scripted"))
    assert [r.key for r in result.results] == list(GRID_TIERS)
    assert [s.family for s in result.families] == ["1", "2", "3"]
    for r in result.results:
        tier = GRID_TIERS[r.key]
        assert r.family == str(tier) and r.done and r.steps == tier and r.invalid_actions == 1
        assert r.reward == pytest.approx(1.0 - 0.1 * (tier - 1)) and r.success
    # what the model was shown: the reply format in the system prompt, every field of the observation,
    # and what was wrong with "north"
    first = next(req for req in server.requests if user_texts(req)[0].startswith("Reach the goal at [1, 0]"))
    assert first["messages"][0]["content"] == (
        DEFAULT_SYSTEM_PROMPT + "\n\nThe action's `action` field: The direction to move.\nReply with exactly one of: UP, DOWN, LEFT, RIGHT (nothing else)."
    )
    assert user_texts(first)[0] == "Reach the goal at [1, 0].\nx: 0\ny: 0"
    retry = next(req for req in server.requests if len(user_texts(req)) == 2 and user_texts(req)[0] == user_texts(first)[0])
    assert "'north' is not one of the allowed values for 'action': UP, DOWN, LEFT, RIGHT" in user_texts(retry)[1]


def test_eval_cli_on_the_grid_world(grid_server, tmp_path):
    out = tmp_path / "grid.json"
    with ScriptedOpenAIServer(grid_rule()) as model_url:
        run = _eval_cli("--base-url", grid_server, "--model", "scripted", "--model-base-url", model_url,
                        "--per-family", "2", "--max-steps", "8", "--out", str(out))
    assert run.returncode == 0, run.stderr
    report = json.loads(out.read_text())
    assert report["env_name"] == "grid"
    rewards = {r["key"]: (r["reward"], r["steps"], r["done"], r["invalid_actions"]) for r in report["results"]}
    assert rewards == {
        key: (pytest.approx(1.0 - 0.1 * (tier - 1)), tier, True, 0) for key, tier in GRID_TIERS.items()
    }


def test_eval_cli_on_the_mcp_environment(mcp_server, tmp_path):
    out = tmp_path / "mcp.json"
    server = ScriptedOpenAIServer(mcp_rule(bad_arguments_first=True, wrong_for=frozenset({"2 + 3"})))
    with server as model_url:
        run = _eval_cli("--base-url", mcp_server, "--model", "scripted", "--model-base-url", model_url,
                        "--per-family", "2", "--max-steps", "4", "--out", str(out))
    assert run.returncode == 0, run.stderr
    report = json.loads(out.read_text())
    results = {r["key"]: r for r in report["results"]}
    assert {k: (r["family"], r["reward"], r["steps"], r["done"], r["invalid_actions"]) for k, r in results.items()} == {
        "sum-1": ("0", 0.0, 2, True, 1),
        "sum-2": ("0", 1.0, 2, True, 1),
        "sum-3": ("1", 1.0, 2, True, 1),
        "sum-4": ("1", 1.0, 2, True, 1),
    }
    assert {f["family"]: f["accuracy"] for f in report["families"]} == {"0": 0.5, "1": 1.0}
    # the model saw the reset's metadata and the tool listing first, never "{}", then the tool results
    seen = [user_texts(req) for req in server.requests]
    assert all(texts[0].startswith("Use the tools to answer the question.\n\nTools you can call:") for texts in seen)
    assert not any("{}" == text for texts in seen for text in texts)
    longest = max((texts for texts in seen if "What is 17 + 25?" in texts), key=len)
    assert longest[1] == "What is 17 + 25?"
    assert "'five' is not of type 'integer'" in longest[2]
    assert '"tool"' in server.requests[0]["messages"][0]["content"]
