"""The trainer end to end against a real OpenEnv server (the toy environment in a subprocess) with a
real tiny mlx model: it learns, the sampler sees every group, and runs resume exactly after a
checkpoint, a SIGKILL, or the environment server dying."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from trainer_helpers import SMALL_VOCAB, RecordingSampler, format_sft_model, read_log, toy_server

from tests.support.waiting import HANG_GUARD_S, until

from openenv_prime.evaluation.episodes import read_episodes
from openenv_prime.mlx_trainer.config import config_from_dict, dump_toml
from openenv_prime.mlx_trainer.training.loop import TrainingError, train


@pytest.fixture(scope="module")
def sft_model(tmp_path_factory):
    """A tiny small-vocabulary model after 30 format-SFT steps (random digit + EOS after "say 7:")."""
    from openenv_prime.mlx_trainer.model.sources import build_tiny_model

    root = tmp_path_factory.mktemp("trainer-models")
    base = build_tiny_model(root / "base", vocab=SMALL_VOCAB, seed=0)
    return format_sft_model(base, root / "sft", ["say 7:"], steps=30, seed=0)


@pytest.fixture(scope="module")
def server():
    with toy_server("0") as (url, proc):
        yield url


def make_config(model: Path, url: str, **over):
    data = {
        "seed": 0, "steps": 6, "plot": False, "model": {"path": str(model)},
        "lora": {"rank": 8, "scale": 20.0, "layers": -1},
        "grpo": {"group_size": 4, "tasks_per_step": 4, "max_new_tokens": 3, "learning_rate": 3e-4, "kl_beta": 0.05},
        "sampler": {"name": "curriculum"},
        "environment": {"base_url": url, "family_field": "level", "max_sessions": 64, "observation_field": "question"},
        "eval": {"every": 3, "tasks_per_family": 2},
        "checkpoint": {"every": 1, "keep": 2},
    }
    for key, value in over.items():
        section, _, name = key.partition("__")
        if name:
            data[section][name] = value
        else:
            data[section] = value
    return config_from_dict(data)


def recorder(holder: list):
    def wrap(sampler):
        holder.append(RecordingSampler(sampler))
        return holder[-1]
    return wrap


def adapters(run_dir: Path):
    import mlx.core as mx

    from openenv_prime.mlx_trainer.training.checkpoint import latest_checkpoint

    return mx.load(str(latest_checkpoint(run_dir) / "adapters.safetensors"))


def assert_same_adapters(a: Path, b: Path):
    import mlx.core as mx

    wa, wb = adapters(a), adapters(b)
    assert wa.keys() == wb.keys()
    for k in wa:
        assert mx.allclose(wa[k], wb[k], atol=1e-6).item(), k


def step_lines(run_dir: Path):
    return [line for line in read_log(run_dir) if line["type"] == "step"]


@pytest.fixture(scope="module")
def reference_run(sft_model, server, tmp_path_factory):
    """Six uninterrupted steps; the runs that get interrupted must end up exactly here."""
    run_dir = tmp_path_factory.mktemp("ref") / "run"
    rec = []
    result = train(make_config(sft_model, server), run_dir, sampler_wrapper=recorder(rec), progress=False)
    return run_dir, rec[0], result


@pytest.mark.parametrize("seed", [0, 1, pytest.param(2, marks=pytest.mark.slow)])
def test_tiny_model_learns_say_7_by_grpo_and_sampler_sees_every_group(sft_model, server, tmp_path, seed):
    cfg = make_config(sft_model, server, seed=seed, steps=20, sampler={"name": "uniform"},
                      grpo={"group_size": 8, "tasks_per_step": 16, "max_new_tokens": 3, "learning_rate": 3e-4},
                      eval={"enabled": False}, checkpoint={"every": 20})
    rec = []
    train(cfg, tmp_path / "run", sampler_wrapper=recorder(rec), progress=False)
    steps = step_lines(tmp_path / "run")
    rewards = [s["reward"] for s in steps]
    first, last = sum(rewards[:5]) / 5, sum(rewards[-5:]) / 5
    assert last > 0.7 and last > first + 0.4, rewards

    # Every scored group reached the sampler, those without signal included, with token costs.
    updates = rec[0].updates
    assert len(updates) == 20 * 16
    no_signal = sum(1 for _, r, _ in updates if len(set(r)) == 1)
    assert no_signal == sum(s["groups"] - s["groups_with_signal"] for s in steps) > 0
    assert sum(sum(c) for _, _, c in updates) == steps[-1]["tokens"]
    assert all(len(r) == len(c) == 8 for _, r, c in updates)
    # The log's per-group rewards are what the sampler heard, in order (what calibration reads).
    logged = [(g["key"], tuple(g["rewards"])) for s in steps for g in s["group_rewards"]]
    assert logged == [(key, tuple(r)) for key, r, _ in updates]
    assert all(isinstance(g["index"], int) for s in steps for g in s["group_rewards"])


def test_log_lines_follow_the_contract(reference_run):
    run_dir, rec, result = reference_run
    log = read_log(run_dir)
    steps = [line for line in log if line["type"] == "step"]
    evals = [line for line in log if line["type"] == "eval"]
    assert [s["step"] for s in steps] == [1, 2, 3, 4, 5, 6]
    assert [e["step"] for e in evals] == [0, 3, 6]
    assert [s["episodes"] for s in steps] == [16 * k for k in range(1, 7)]
    for s in steps:
        assert set(s["seconds"]) == {"generation", "environment", "training", "other"}
        assert s["family_reward"].keys() == {"0"} and 0 <= s["reward"] <= 1
        assert s["tokens_per_s"] > 0 and "draws" in s["sampler"]
    # Steps 2, 3, 5 and 6 were reset while the step before trained; the eval after step 3 closes the sockets.
    assert [s["prefetch_seconds"] > 0 for s in steps] == [False, True, True, False, True, True]
    for e in evals:
        assert e["n"] == {"0": 2} and e["accuracy"].keys() == {"0"} and 0 <= e["overall"] <= 1
    assert result.state.finished and result.state.step == 6
    assert (run_dir / "config.toml").is_file()
    assert len(list((run_dir / "checkpoints").glob("step_*"))) == 2  # keep = 2


def test_every_eval_writes_its_episodes_under_the_run_dir(reference_run):
    run_dir = reference_run[0]
    evals = {line["step"]: line for line in read_log(run_dir) if line["type"] == "eval"}
    rows = read_episodes(run_dir / "episodes.jsonl")
    assert [row["step"] for row in rows] == [0, 0, 3, 3, 6, 6]  # both tasks of the one family, at every eval
    for row in rows:
        assert [m["role"] for m in row["messages"]][-2:] == ["user", "assistant"]
        assert "say 7:" in row["messages"][-2]["content"] and row["messages"][-1]["content"] == row["reply"]
        assert row["step_rewards"] == [row["reward"]] and 1 <= row["tokens"] <= 3  # eval replies: max_new_tokens 3
    for step, line in evals.items():
        assert sum(row["success"] for row in rows if row["step"] == step) / 2 == line["overall"]


def test_checkpoint_then_resume_equals_uninterrupted_run(reference_run, sft_model, server, tmp_path):
    ref_dir, ref_rec, _ = reference_run
    run_dir = tmp_path / "run"
    first, second = [], []
    train(make_config(sft_model, server, steps=3), run_dir, sampler_wrapper=recorder(first), progress=False)
    with pytest.raises(TrainingError, match="--resume"):
        train(make_config(sft_model, server), run_dir, progress=False)
    result = train(make_config(sft_model, server), run_dir, resume=True, sampler_wrapper=recorder(second), progress=False)
    assert not result.already_finished and result.state.step == 6
    assert first[0].draws + second[0].draws == ref_rec.draws
    assert_same_adapters(run_dir, ref_dir)
    assert [s["reward"] for s in step_lines(run_dir)] == [s["reward"] for s in step_lines(ref_dir)]
    episodes = [(r["step"], r["index"], r["reply"]) for r in read_episodes(run_dir / "episodes.jsonl")]
    assert episodes == [(r["step"], r["index"], r["reply"]) for r in read_episodes(ref_dir / "episodes.jsonl")]

    again = train(make_config(sft_model, server), run_dir, resume=True, progress=False)
    assert again.already_finished and again.state.step == 6


def test_prefetching_the_next_steps_resets_changes_nothing_but_time(reference_run, sft_model, server, tmp_path):
    ref_dir, ref_rec, _ = reference_run
    rec = []
    train(make_config(sft_model, server, environment__prefetch=False), tmp_path / "run", sampler_wrapper=recorder(rec),
          progress=False)
    assert rec[0].draws == ref_rec.draws and rec[0].updates == ref_rec.updates
    assert [s["reward"] for s in step_lines(tmp_path / "run")] == [s["reward"] for s in step_lines(ref_dir)]
    assert all(s["prefetch_seconds"] == 0 for s in step_lines(tmp_path / "run"))
    assert_same_adapters(tmp_path / "run", ref_dir)
    # Step 5's checkpoint was written while step 6's tasks were already drawn: it holds the state from before that draw.
    saved = [json.loads((d / "checkpoints" / "step_000005" / "state.json").read_text())["sampler"]
             for d in (tmp_path / "run", ref_dir)]
    assert saved[0] == saved[1]


def test_sigkill_then_resume_loses_at_most_the_step_in_progress(reference_run, sft_model, server, tmp_path, capsys):
    ref_dir = reference_run[0]
    cfg_path = tmp_path / "config.toml"
    cfg_path.write_text(dump_toml(make_config(sft_model, server)))
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "openenv_prime", "train", str(cfg_path), "--out", str(run_dir), "--no-progress"]
    env = dict(os.environ)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    try:
        until((run_dir / "checkpoints" / "step_000002" / "state.json").exists, "a checkpoint of step 2", process=proc,
              interval=0.01)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    resumed = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, timeout=300, env=env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert [s["step"] for s in step_lines(run_dir)] == [1, 2, 3, 4, 5, 6]
    assert_same_adapters(run_dir, ref_dir)
    from openenv_prime.cli import main

    capsys.readouterr()
    assert main(cmd[3:] + ["--resume"]) == 0
    assert "already finished at step 6" in capsys.readouterr().out


def test_server_dying_mid_run_gives_clear_error_and_a_checkpoint_to_resume_from(reference_run, sft_model, server, tmp_path):
    ref_dir, ref_rec, _ = reference_run
    run_dir = tmp_path / "run"
    rec = []
    with toy_server("0") as (url, proc):
        def wrap(sampler):
            r = RecordingSampler(sampler)
            r.on_sample = lambda n: (proc.kill(), proc.wait(timeout=30)) if n == 3 else None
            rec.append(r)
            return r

        with pytest.raises(TrainingError) as err:
            train(make_config(sft_model, url), run_dir, sampler_wrapper=wrap, progress=False)
    message = str(err.value)
    assert "failed during step 3" in message and "--resume" in message and url in message
    assert (run_dir / "checkpoints" / "step_000002" / "state.json").is_file()
    resumed = []  # once a server is back (here: another one), the run continues where it stopped
    train(make_config(sft_model, server), run_dir, resume=True, sampler_wrapper=recorder(resumed), progress=False)
    assert rec[0].draws[:2] + resumed[0].draws == ref_rec.draws
    assert_same_adapters(run_dir, ref_dir)


def test_ctrl_c_saves_the_last_completed_step_closes_sockets_and_resumes_exactly(reference_run, sft_model, tmp_path):
    from openenv_prime.client import EpisodeSession
    from openenv_prime.mlx_trainer.training.checkpoint import latest_checkpoint
    from openenv_prime.mlx_trainer.training.loop import TrainingInterrupted

    ref_dir, ref_rec, _ = reference_run
    run_dir = tmp_path / "run"
    with toy_server("0", max_sessions=16) as (url, _):  # exactly the 4 x 4 sockets the trainer opens
        def interrupt_once_step_2_is_saved():
            until((run_dir / "checkpoints" / "step_000002" / "state.json").exists, "a checkpoint of step 2", interval=0.001)
            os.kill(os.getpid(), signal.SIGINT)

        def wrap(sampler):
            # Step 3's tasks are drawn while step 2 trains (prefetch): Ctrl-C comes once step 2 is saved, while
            # step 3's first wave holds all 16 sockets or step 3 is generating.
            r = RecordingSampler(sampler)
            r.on_sample = lambda n: threading.Thread(target=interrupt_once_step_2_is_saved).start() if n == 3 else None
            return r

        with pytest.raises(TrainingInterrupted) as err:
            train(make_config(sft_model, url), run_dir, sampler_wrapper=wrap, progress=False)
        message = str(err.value)
        assert "interrupted (SIGINT) during step 3" in message and "step, 2," in message and "--resume" in message
        assert latest_checkpoint(run_dir).name == "step_000002"
        assert [s["step"] for s in step_lines(run_dir)] == [1, 2]

        async def all_sessions_free():  # the trainer's 16 sockets were closed: 16 new ones are admitted
            sessions = [EpisodeSession(url, timeout=30, capacity_wait=0) for _ in range(16)]
            try:
                await asyncio.gather(*(s.reset(split="train", index=0) for s in sessions))
            finally:
                await asyncio.gather(*(s.close() for s in sessions))

        asyncio.run(all_sessions_free())
        resumed = []
        train(make_config(sft_model, url), run_dir, resume=True, sampler_wrapper=recorder(resumed), progress=False)
    assert resumed[0].draws == ref_rec.draws[2:]
    assert_same_adapters(run_dir, ref_dir)


def test_ctrl_c_on_the_cli_exits_with_a_clear_message(sft_model, server, tmp_path):
    from openenv_prime.mlx_trainer.training.checkpoint import latest_checkpoint

    cfg_path = tmp_path / "config.toml"
    cfg_path.write_text(dump_toml(make_config(sft_model, server, steps=50)))
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "openenv_prime", "train", str(cfg_path), "--out", str(run_dir), "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        until((run_dir / "checkpoints" / "step_000001" / "state.json").exists, "a checkpoint of step 1", process=proc,
              interval=0.01)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode == 130, err[-3000:]
    assert "interrupted (SIGINT)" in err and "--resume" in err
    assert "Traceback" not in err and "InvalidStateError" not in err
    last = step_lines(run_dir)[-1]["step"]
    assert latest_checkpoint(run_dir).name == f"step_{last:06d}"
