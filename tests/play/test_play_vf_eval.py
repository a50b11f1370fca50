"""`vf-eval openenv-prime` on the grid world and the MCP environment with a scripted model: traces carry the
keys, families and rewards, and the model saw the schema-driven instructions and every observation field."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer
from tests.play.players import grid_rule, mcp_rule, user_texts
from tests.support.waiting import HANG_GUARD_S

VF_EVAL = Path(sys.executable).with_name("vf-eval")
GRID_TIERS = {"grid-a": 1, "grid-b": 1, "grid-c": 2, "grid-d": 2, "grid-e": 3, "grid-f": 3}


def _vf_eval(openenv_url: str, model_url: str, out: Path, *extra: str) -> list[dict]:
    command = [
        str(VF_EVAL), "openenv-prime", "-m", "scripted", "--client.base-url", model_url, "--no-push", "--no-rich",
        "-o", str(out), "--run.name", "run", "--env.taskset.base-url", openenv_url, "-c", "8", *extra,
    ]
    env = {**os.environ, "PRIME_API_KEY": "", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=HANG_GUARD_S, env=env, cwd=out.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in (out / "run" / "traces.jsonl").read_text().splitlines()]


def test_vf_eval_grid_world(grid_server, tmp_path):
    server = ScriptedOpenAIServer(grid_rule(blunder_first=True))
    with server as model_url:
        episodes = _vf_eval(grid_server, model_url, tmp_path / "out", "-n", "6")
    assert sorted(e["task"]["key"] for e in episodes) == [f"grid/test/{key}" for key in GRID_TIERS]
    for episode in episodes:
        data = episode["task"]["data"]
        (trace,) = episode["traces"]
        tier = GRID_TIERS[data["spec"]["id"]]
        assert episode["ok"] and data["family"] == str(tier)
        assert trace["info"]["openenv"]["rewards"] == pytest.approx([-0.1] * (tier - 1) + [1.0])
        assert trace["info"]["openenv"]["invalid_actions"] == 1
        assert trace["rewards"]["openenv_return"]["score"] == pytest.approx(1.0 - 0.1 * (tier - 1))
        assert trace["stop_condition"] == "openenv_done"
    first = next(req for req in server.requests if user_texts(req)[0].startswith("Reach the goal at [1, 0]"))
    assert first["messages"][0]["content"] == (
        "You act in an environment.\n\nThe action's `action` field: The direction to move.\n"
        "Reply with exactly one of: UP, DOWN, LEFT, RIGHT (nothing else)."
    )
    assert user_texts(first)[0] == "Reach the goal at [1, 0].\nx: 0\ny: 0"


def test_vf_eval_mcp_environment(mcp_server, tmp_path):
    server = ScriptedOpenAIServer(mcp_rule(wrong_for=frozenset({"4 + 4"})))
    with server as model_url:
        episodes = _vf_eval(mcp_server, model_url, tmp_path / "out", "-n", "4")
    by_key = {e["task"]["key"]: e for e in episodes}
    assert sorted(by_key) == [f"sum_tools/test/sum-{i}" for i in range(1, 5)]
    for key, episode in by_key.items():
        (trace,) = episode["traces"]
        expected = 0.0 if key.endswith("sum-2") else 1.0
        assert episode["ok"] and trace["stop_condition"] == "openenv_done"
        assert trace["info"]["openenv"]["steps"] == 2 and trace["info"]["openenv"]["invalid_actions"] == 0
        assert trace["rewards"]["openenv_return"]["score"] == expected
    assert {e["task"]["data"]["family"] for e in episodes} == {"0", "1"}
    system = server.requests[0]["messages"][0]["content"]
    assert system.startswith("You act in an environment.") and '{"tool": "<tool name>"' in system
    seen = [user_texts(req) for req in server.requests]
    assert all(texts[0].startswith("Use the tools to answer the question.\n\nTools you can call:") for texts in seen)
    assert any(texts[1:] == ["What is 58 + 39?"] for texts in seen)
