"""`openenv-prime eval` end to end, in a subprocess, against the real chain_sum server and the scripted model."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer, chain_sum_rule
from tests.support.waiting import HANG_GUARD_S

ROOT = Path(__file__).resolve().parents[2]


def _eval(*args: str, timeout: float = HANG_GUARD_S) -> subprocess.CompletedProcess:
    # Wide enough that rich wraps no message: the tmp paths inside them are longer under pytest-xdist (popen-gw1/).
    env = dict(os.environ, COLUMNS="1000", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "openenv_prime", "eval", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


@pytest.fixture(scope="module")
def model_url():
    with ScriptedOpenAIServer(chain_sum_rule(correct_tiers={1, 3})) as url:
        yield url


def test_eval_prints_the_table_and_writes_the_report(chain_sum_server, model_url, tmp_path):
    out = tmp_path / "nested" / "report.json"
    run = _eval("--base-url", chain_sum_server, "--model", "scripted", "--model-base-url", model_url,
                "--per-family", "3", "--seed", "5", "--out", str(out))
    assert run.returncode == 0, run.stderr
    assert "accuracy" in run.stdout and "15 episodes" in run.stdout
    report = json.loads(out.read_text())
    assert report["seed"] == 5 and report["split"] == "test" and report["env_name"] == "chain_sum"
    assert report["config"]["per_family"] == 3 and report["config"]["base_url"] == chain_sum_server
    assert report["model"]["name"] == "scripted" and report["model"]["temperature"] == 0.0
    assert {"python", "openenv-prime", "httpx", "websockets", "pydantic", "rich"} <= set(report["versions"])
    assert {f["family"]: f["accuracy"] for f in report["families"]} == {"0": 0.0, "1": 1.0, "2": 0.0, "3": 1.0, "4": 0.0}
    assert report["accuracy"] == pytest.approx(6 / 15)
    assert len(report["results"]) == 15
    assert set(report["results"][0]) == {"key", "family", "split", "index", "reward", "success", "reply", "steps",
                                         "done", "truncated", "invalid_actions", "turns", "reply_chars", "stop", "error",
                                         "tokens"}
    # what this eval played, apart from any trainer's counters: one reply per chain_sum episode
    assert report["episodes"] == 15 and report["replies"] == sum(r["turns"] for r in report["results"]) == 15
    assert report["reply_chars"] == sum(len(r["reply"]) for r in report["results"]) > 0
    assert {r["stop"] for r in report["results"]} == {"done"}
    assert report["truncated"] == report["ended_invalid"] == report["unscored"] == 0 and report["warnings"] == []
    for family in "01234":  # the table has one row per tier
        assert any(line.split("│")[1].strip() == family for line in run.stdout.splitlines() if line.count("│") >= 5)

    again = tmp_path / "again.json"
    assert _eval("--base-url", chain_sum_server, "--model", "scripted", "--model-base-url", model_url,
                 "--per-family", "3", "--seed", "5", "--out", str(again)).returncode == 0
    assert json.loads(again.read_text())["results"] == report["results"]


def test_eval_serves_its_own_chain_sum(model_url, tmp_path):
    out = tmp_path / "r.json"
    run = _eval("--serve-chain-sum", "--tiers", "2", "--model", "scripted", "--model-base-url", model_url,
                "--per-family", "2", "--out", str(out))
    assert run.returncode == 0, run.stderr
    report = json.loads(out.read_text())
    assert report["server"] == {"embedded": "chain-sum", "tiers": 2}
    assert {f["family"]: f["accuracy"] for f in report["families"]} == {"0": 0.0, "1": 1.0}


def test_eval_with_the_server_down_says_where(model_url, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = _eval("--base-url", f"http://127.0.0.1:{port}", "--model", "m", "--model-base-url", model_url,
                "--timeout", "2", "--out", str(tmp_path / "r.json"))
    assert run.returncode == 1
    assert f"127.0.0.1:{port}" in run.stderr and "cannot reach" in run.stderr
    assert not (tmp_path / "r.json").exists()


def test_eval_rejects_bad_settings_by_name(chain_sum_server, model_url, tmp_path):
    run = _eval("--base-url", chain_sum_server, "--model", "m", "--model-base-url", model_url,
                "--per-family", "0", "--out", str(tmp_path / "r.json"))
    assert run.returncode == 2 and "--per-family" in run.stderr and "per_family" not in run.stderr
    run = _eval("--base-url", chain_sum_server, "--model", "m", "--model-base-url", model_url,
                "--family-field", "colour", "--out", str(tmp_path / "r.json"))
    assert run.returncode == 1 and "no family field 'colour'" in run.stderr and "Traceback" not in run.stderr
    run = _eval("--base-url", chain_sum_server, "--model", "m", "--model-base-url", model_url,
                "--split", "dev", "--out", str(tmp_path / "r.json"))
    assert run.returncode == 1 and "dev" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "r.json").exists()


def test_the_flags_default_to_the_episode_rules_every_consumer_shares():
    """The eval's CLI and config defaults are the trainer's and the taskset's (client/engine/episode_rules.py)."""
    import argparse

    from openenv_prime.client.engine.episode_rules import DEFAULT_RULES
    from openenv_prime.evaluation import EvalConfig
    from openenv_prime.evaluation.cli import config_kwargs, register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["eval", "--model", "m", "--model-base-url", "http://h:1/v1"])
    from_flags = EvalConfig(**config_kwargs(args, args.base_url))
    assert from_flags == EvalConfig()
    assert from_flags.rules() == DEFAULT_RULES
