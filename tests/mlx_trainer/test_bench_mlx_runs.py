"""The MLX benchmarks (benchmarks/bench_mlx_*.py) build their batches and runs with the trainer's own parts: a change
there must not break them silently."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

from tests.support.waiting import HANG_GUARD_S

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


def _bench(name: str = "bench_mlx_common"):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_env_prompts_are_chat_templated_observations(tiny_model_dir, chain_sum_server):
    from mlx_lm import load

    _, tokenizer = load(str(tiny_model_dir))
    prompts = _bench().env_prompts(chain_sum_server, tokenizer, 3, "Answer with the number.")
    assert len(prompts) == 3 and all(isinstance(t, int) for p in prompts for t in p)
    assert len({tuple(p) for p in prompts}) == 3  # three tasks, three questions
    assert all(len(p) > 20 for p in prompts)


def test_each_benchmark_script_starts(tmp_path):
    """Each benchmark is its own script that finds the shared module beside it (run from another directory)."""
    import subprocess

    scripts = sorted(BENCHMARKS.glob("bench_mlx_*.py"))
    assert {s.stem for s in scripts} >= {"bench_mlx_speed", "bench_mlx_compare", "bench_mlx_interrupt",
                                         "bench_mlx_vs_mlx_lm_lora", "bench_mlx_quantized"}
    for script in scripts:
        if script.stem == "bench_mlx_common":
            continue
        done = subprocess.run([sys.executable, str(script), "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=HANG_GUARD_S)
        assert done.returncode == 0 and "usage:" in done.stdout, f"{script.name}: {done.stderr[-1000:]}"


def test_benchmark_runs_train_on_the_chain_sum_config_not_the_default():
    """The benchmarks' tables stay comparable when the embedded default changes: they read configs/mlx/chain-sum.toml."""
    from openenv_prime.mlx_trainer.config import config_from_dict

    config = config_from_dict(_bench().chain_sum_config())
    assert config.environment.embedded == "chain-sum" and config.environment.family_field == "tier"
    assert config.grpo.system_prompt == _bench().SYSTEM_PROMPT


@pytest.mark.slow
def test_the_comparison_runs_each_sampler_resumably_and_reports(tmp_path):
    """bench_mlx_compare.py on the tiny model (1 seed x 2 steps, reasoning-gym server with a heldout split): each
    sampler trains in its own run directory, the peer's state is the peer's, a second call trains nothing again,
    and the report prints the tables and draws the overlaid plot."""
    import json
    import subprocess

    command = [sys.executable, str(BENCHMARKS / "bench_mlx_compare.py"), "--model", "tiny", "--seeds", "0", "--steps", "2",
               "--datasets", "products", "--train-size", "8", "--heldout-size", "3", "--eval-every", "0",
               "--group-size", "2", "--out", str(tmp_path / "cmp")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stderr[-3000:]
    for sampler in ("curriculum", "uniform", "greso"):
        run = tmp_path / "cmp" / "seed0" / sampler
        state = json.loads((run / "checkpoints" / "step_000002" / "state.json").read_text())
        assert state["finished"] and state["step"] == 2
        assert (state["sampler"]["sampler"] == "PeerSampler") == (sampler == "greso")
        evals = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines() if '"eval"' in line]
        assert [e["step"] for e in evals] == [0, 2] and set(evals[0]["n"].values()) == {3}  # every held-out question
    assert state["sampler"]["config"]["peer"] == "greso" and "p_hard" in state["sampler"]["peer"]
    assert "| greso | 0 |" in done.stdout and "Per-seed wins of curriculum" in done.stdout
    assert (tmp_path / "cmp" / "compare.png").stat().st_size > 10_000
    tables, table = [], []
    for line in done.stdout.splitlines() + [""]:  # consecutive lines that start with "|" make one markdown table
        if line.startswith("|"):
            table.append(line)
        elif table:
            tables, table = tables + [table], []
    assert len(tables) == 3
    for table in tables:  # every row, the separator included, has as many cells as the header
        assert {line.count("|") for line in table} == {table[0].count("|")}, table[:2]
    again = subprocess.run(command, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert again.returncode == 0 and "training (" not in again.stdout and "| uniform | 0 |" in again.stdout
