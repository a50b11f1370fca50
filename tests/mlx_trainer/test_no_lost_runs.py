"""Ways to lose a run, each closed: dropout outside the loss, a run directory stuck before its first
checkpoint, a user's files overwritten, a resume with a silently different config, and Ctrl-C.
(Ctrl-C in a whole training run is tested in test_training.py, next to the uninterrupted reference run.)"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from trainer_helpers import read_log

from openenv_prime.mlx_trainer.config import config_from_dict, dump_toml
from openenv_prime.mlx_trainer.errors import TrainingError
from openenv_prime.mlx_trainer.training.loop import train
from openenv_prime.mlx_trainer.worker import MainThreadMLX
from tests.support.waiting import HANG_GUARD_S, until


# ---- eval mode outside the loss ------------------------------------------------------------------------------

def test_lora_dropout_acts_only_inside_the_loss(tiny_model_dir):
    import mlx.core as mx

    from openenv_prime.mlx_trainer.training.grpo import make_batch, token_logprobs, train_on_batch
    from openenv_prime.mlx_trainer.training.lora import lora_modules
    from openenv_prime.mlx_trainer.training.trainable import load_trainable

    cfg = config_from_dict({"model": {"path": str(tiny_model_dir)}, "lora": {"dropout": 0.9},
                            "grpo": {"learning_rate": 1e-3}})
    model, tok, optimizer = load_trainable(cfg)
    assert not any(m.training for _, m in model.named_modules())
    mx.random.seed(0)
    for m in lora_modules(model):  # a trained adapter: mlx_lm starts lora_b at 0, where dropout changes nothing
        m.lora_b = 0.1 * mx.random.normal(m.lora_b.shape)
    batch = make_batch([([5, 6, 7], [8, 9]), ([5, 6], [10, 11, 12])], [1.0, -1.0], 0)
    first, second = token_logprobs(model, batch, 1.0), token_logprobs(model, batch, 1.0)
    assert mx.array_equal(first, second).item()  # sampling, old log-probs and evals see no dropout
    train_on_batch(model, optimizer, batch, cfg.grpo)
    assert not any(m.training for _, m in model.named_modules())  # back in eval mode after the update


# ---- the run directory ---------------------------------------------------------------------------------------

def _config(model, url="http://127.0.0.1:9", **over):
    data = {"seed": 0, "steps": 1, "plot": False, "model": {"path": str(model)},
            "lora": {"rank": 4, "layers": -1},
            "grpo": {"group_size": 4, "tasks_per_step": 2, "max_new_tokens": 3, "learning_rate": 3e-4},
            "sampler": {"name": "uniform"},
            "environment": {"base_url": url, "family_field": "level", "max_sessions": 16, "observation_field": "question"},
            "eval": {"every": 0, "tasks_per_family": 2}}
    for key, value in over.items():
        data[key] = {**data[key], **value} if isinstance(data.get(key), dict) else value
    return config_from_dict(data)


def test_a_directory_that_is_not_a_run_is_never_written_to(tiny_model_dir, toy, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "config.toml").write_text("# my own notes\n")
    with pytest.raises(TrainingError, match="no openenv-prime run") as err:
        train(_config(tiny_model_dir, toy, plot=True), mine, progress=False)  # a live server: nothing else stops the write
    assert "--out NEW_DIR" in str(err.value)
    assert [p.name for p in mine.iterdir()] == ["config.toml"]
    assert (mine / "config.toml").read_text() == "# my own notes\n"


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    from trainer_helpers import toy_server

    with toy_server("0") as (url, _):
        yield url


@pytest.mark.parametrize("resume", [False, True])
@pytest.mark.parametrize("marked", [True, False], ids=["marked", "older-release"])
def test_a_run_that_stopped_before_its_first_checkpoint_starts_again(tiny_model_dir, toy, tmp_path, resume, marked, capsys):
    import shutil

    run_dir = tmp_path / "run"
    train(_config(tiny_model_dir, toy), run_dir, progress=False)
    shutil.rmtree(run_dir / "checkpoints")  # as if killed during step 1, after the step-0 eval was logged
    if not marked:
        (run_dir / "run.json").unlink()
    assert any(line["type"] == "eval" for line in read_log(run_dir))
    capsys.readouterr()
    result = train(_config(tiny_model_dir, toy), run_dir, resume=resume, progress=False)
    assert result.state.step == 1 and not result.already_finished
    log = read_log(run_dir)
    assert [(line["type"], line["step"]) for line in log] == [("eval", 0), ("step", 1), ("eval", 1)]
    assert "starting it again from step 0" in capsys.readouterr().err


def test_resume_with_a_different_config_lists_the_differences_and_needs_permission(tiny_model_dir, toy, tmp_path):
    run_dir = tmp_path / "run"
    train(_config(tiny_model_dir, toy), run_dir, progress=False)
    saved, log = (run_dir / "config.toml").read_text(), (run_dir / "log.jsonl").read_text()
    changed = _config(tiny_model_dir, toy, steps=2, grpo={"learning_rate": 1e-3}, lora={"rank": 4, "dropout": 0.1})
    with pytest.raises(TrainingError) as err:
        train(changed, run_dir, resume=True, progress=False)
    message = str(err.value)
    assert "grpo.learning_rate: 0.0003 -> 0.001" in message and "lora.dropout: 0.0 -> 0.1" in message
    assert "--allow-config-change" in message and "steps" not in message.replace("--", "")
    assert (run_dir / "config.toml").read_text() == saved and (run_dir / "log.jsonl").read_text() == log

    result = train(changed, run_dir, resume=True, allow_config_change=True, progress=False)
    assert result.state.step == 2
    assert "learning_rate = 0.001" in (run_dir / "config.toml").read_text()
    changes = [line for line in read_log(run_dir) if line["type"] == "config_change"]
    assert len(changes) == 1 and changes[0]["step"] == 1 and len(changes[0]["changes"]) == 2


def test_cli_resume_with_a_different_config_exits_with_the_list(tiny_model_dir, toy, tmp_path):
    run_dir = tmp_path / "run"
    train(_config(tiny_model_dir, toy), run_dir, progress=False)
    other = tmp_path / "other.toml"
    other.write_text(dump_toml(_config(tiny_model_dir, toy, grpo={"temperature": 0.5})))
    proc = subprocess.run([sys.executable, "-m", "openenv_prime", "train", str(other), "--out", str(run_dir), "--resume",
                           "--no-progress"], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert proc.returncode == 1
    assert "grpo.temperature: 1.0 -> 0.5" in proc.stderr and "--allow-config-change" in proc.stderr


def test_resume_of_a_run_saved_under_the_old_curriculum_defaults_keeps_its_settings(tiny_model_dir, toy, tmp_path, capsys):
    """A run saved when the curriculum's defaults were signal="headroom", within="cycle" (its config.toml says only
    ``kwargs = {}``, its sampler state has no "within") resumes under the saved settings with a note, where the config
    leaves them at default; a config that sets a conflicting one is refused before anything is written."""
    import json

    run_dir = tmp_path / "run"
    curriculum = {"name": "curriculum", "kwargs": {}}
    train(_config(tiny_model_dir, toy, sampler={**curriculum, "kwargs": {"signal": "headroom", "within": "cycle"}}),
          run_dir, progress=False)
    (run_dir / "config.toml").write_text(dump_toml(_config(tiny_model_dir, toy, sampler=curriculum)))  # as written then
    [state_file] = (run_dir / "checkpoints").glob("*/state.json")
    state = json.loads(state_file.read_text())
    del state["sampler"]["config"]["within"]  # saved before the setting existed
    state_file.write_text(json.dumps(state))
    saved_log = (run_dir / "log.jsonl").read_text()

    conflicting = _config(tiny_model_dir, toy, steps=2, sampler={**curriculum, "kwargs": {"signal": "frontier"}})
    with pytest.raises(TrainingError) as err:
        train(conflicting, run_dir, resume=True, allow_config_change=True, progress=False)
    assert "sampler.kwargs.signal = 'frontier', but the sampler was saved with signal = 'headroom'" in str(err.value)
    assert "start a new run with --out NEW_DIR" in str(err.value)
    assert (run_dir / "log.jsonl").read_text() == saved_log and len(list((run_dir / "checkpoints").iterdir())) == 1

    capsys.readouterr()
    result = train(_config(tiny_model_dir, toy, steps=2, sampler=curriculum), run_dir, resume=True, progress=False)
    notes = [line for line in capsys.readouterr().err.splitlines() if "the checkpoint's sampler was saved with" in line]
    assert len(notes) == 2 and "signal = 'headroom'" in notes[0] + notes[1] and "within = 'cycle'" in notes[0] + notes[1]
    assert result.state.step == 2
    assert {k: result.state.sampler["config"][k] for k in ("signal", "within")} == {"signal": "headroom", "within": "cycle"}
    assert [line["step"] for line in read_log(run_dir) if line["type"] == "step"] == [1, 2]


# ---- Ctrl-C in the worker --------------------------------------------------------------------------------------

@pytest.mark.parametrize("delay", [0.0, 0.05, 0.12, 0.2, 0.31])
def test_ctrl_c_lets_the_running_mlx_job_finish_and_the_run_save(delay):
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN where the suite itself runs in the background
    mlx = MainThreadMLX()
    log: list[str] = []
    started: list[int] = []

    def job(i: int) -> int:
        started.append(i)
        time.sleep(0.05)  # sleep-is-work: a job the signal lands in
        log.append(f"job {i}")
        return i

    async def run() -> str:
        threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT)).start()  # drive() handles signals by now
        try:
            for i in range(100):
                await mlx.run(job, i)
        except asyncio.CancelledError:
            await mlx.barrier()
            finished = len(log)
            await mlx.run(log.append, "saved")  # the final checkpoint still runs on the main thread
            return f"stopped after {finished} jobs"
        return "ran to the end"

    try:
        outcome = mlx.drive(run())
    except BaseException as exc:  # let out of drive, a KeyboardInterrupt would abort the whole session
        pytest.fail(f"Ctrl-C escaped drive as {type(exc).__name__}: {exc!r}")
    assert outcome.startswith("stopped after") and log[-1] == "saved"
    assert log[:-1] == [f"job {i}" for i in range(len(log) - 1)]  # jobs ran whole and in order
    assert len(started) == len(log) - 1  # none was cut off half-way (the interrupted one finished too)
    assert mlx.interrupted == "SIGINT"
    assert signal.getsignal(signal.SIGINT) is before  # the caller's handler is back


def test_a_second_ctrl_c_stops_at_once():
    mlx = MainThreadMLX()

    async def stubborn() -> None:
        threading.Timer(0.1, twice).start()
        while True:
            try:
                await mlx.run(time.sleep, 0.05)
            except asyncio.CancelledError:
                continue

    def twice():
        os.kill(os.getpid(), signal.SIGINT)
        until(lambda: mlx.interrupted, "the first SIGINT to be handled")  # two signals at once would be one
        os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        mlx.drive(stubborn())


def test_ctrl_c_during_a_generation_drops_it_after_one_token(tiny_model_dir):
    """Ctrl-C does not wait for a long generation (tens of seconds on SmolLM2): the batch is dropped at the next token."""
    import mlx.core as mx
    from mlx_lm import load

    from openenv_prime.mlx_trainer.rollouts.generation import generate

    mx.random.seed(0)  # the same samples every run: no early EOS can end the generation before the signal
    model, tokenizer = load(str(tiny_model_dir))
    prompts = [tokenizer.encode("abc"), tokenizer.encode("xyz")]
    mlx = MainThreadMLX()
    asked: list[bool] = []

    def stop() -> bool:
        if len(asked) == 3:
            os.kill(os.getpid(), signal.SIGINT)
            until(lambda: mlx.interrupted, "the SIGINT handler, on this (main) thread, to run")
        asked.append(mlx.stopping())
        return asked[-1]

    async def run() -> str:
        try:
            await mlx.run(generate, model, tokenizer, prompts, max_tokens=200, temperature=1.0, stop=stop)
        except asyncio.CancelledError:
            return "cancelled"
        return "finished"

    assert mlx.drive(run()) == "cancelled"
    assert asked == [False, False, False, True]  # asked once per token, stopped at the first after the signal

    control: list[int] = []  # without the signal the same generation runs on: the stop above cut it short
    mx.random.seed(0)
    generate(model, tokenizer, prompts, max_tokens=200, temperature=1.0, stop=lambda: control.append(1) and False)
    assert len(control) > 10


def test_ctrl_c_never_surfaces_as_invalid_state_error():
    """An interrupt landing as a job's result is being set came out as InvalidStateError in 7-19 of 100 tries before."""
    import collections
    import random

    outcomes: collections.Counter = collections.Counter()
    rng = random.Random(0)
    for _ in range(100):
        mlx = MainThreadMLX()

        timer = threading.Timer(rng.uniform(0, 0.05), os.kill, (os.getpid(), signal.SIGINT))

        async def run() -> None:
            timer.start()
            for _ in range(10**6):
                await mlx.run(sum, range(50))  # short jobs: the interrupt often lands around set_result

        try:
            mlx.drive(run())
        except BaseException as exc:
            outcomes[type(exc).__name__] += 1
        timer.join()  # its signal was sent before the next try
    assert outcomes == {"CancelledError": 100}
