"""report_to: a run's log.jsonl mirrored to TensorBoard and to an offline W&B run, read back from the files they
write (tensorboard's EventAccumulator; the W&B run's .wandb file), once each across a resume."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest

from trainer_helpers import read_log

from openenv_prime.mlx_trainer.config import config_from_dict, dump_toml
from openenv_prime.mlx_trainer.errors import TrainingError
from openenv_prime.mlx_trainer.report.trackers import record_scalars
from openenv_prime.mlx_trainer.training.loop import train
from openenv_prime.mlx_trainer.training.rundir import config_changes


@pytest.fixture(scope="module")
def toy():
    from trainer_helpers import toy_server

    with toy_server("0") as (url, _):
        yield url


def _config(model, url, **over):
    """One step of 2 tasks x 4 rollouts on the tiny model, evaluated at step 0 and at the end."""
    data = {"seed": 0, "steps": 1, "plot": False, "model": {"path": str(model)},
            "lora": {"rank": 4, "layers": -1},
            "grpo": {"group_size": 4, "tasks_per_step": 2, "max_new_tokens": 3, "learning_rate": 3e-4},
            "sampler": {"name": "curriculum"},
            "environment": {"base_url": url, "family_field": "level", "max_sessions": 16,
                            "observation_field": "question"},
            "eval": {"every": 0, "tasks_per_family": 2}, **over}
    return config_from_dict(data)


def _run_then_resume(model, url, run_dir: Path, report_to: list[str], after=lambda: None) -> list[dict]:
    """Step 1 with ``report_to``, then --resume to step 2 with it, ``after()`` each: the log's records (evals at 0, 1
    and 2)."""
    train(_config(model, url, report_to=report_to), run_dir, progress=False)
    after()
    train(_config(model, url, steps=2, report_to=report_to), run_dir, resume=True, progress=False)
    after()
    log = read_log(run_dir)
    assert [(r["type"], r["step"]) for r in log] == [("eval", 0), ("step", 1), ("eval", 1), ("step", 2), ("eval", 2)]
    return log


def _expected(log: list[dict]) -> dict[tuple[str, int], float]:
    """(name, step) -> value for every scalar of the log, after checking the names the docs promise against the log."""
    expected = {(name, r["step"]): value for r in log for name, value in record_scalars(r).items()}
    for r in log:
        if r["type"] == "step":
            assert expected[("train/loss", r["step"])] == r["loss"]
            assert expected[("train/reward", r["step"])] == r["reward"]
            assert expected[("train/seconds/generation", r["step"])] == r["seconds"]["generation"]
            assert expected[("train/sampler/draws", r["step"])] == r["sampler"]["draws"]
        else:
            assert expected[("openenv/eval/0/accuracy", r["step"])] == r["accuracy"]["0"]
            assert expected[("openenv/eval/accuracy", r["step"])] == r["overall"]
            assert expected[("openenv/sampler/episodes", r["step"])] == r["episodes"]
            assert expected[("openenv/sampler/cost", r["step"])] == r["cost"]
    assert expected[("openenv/sampler/episodes", 2)] == 16  # 2 steps x 2 tasks x 4 rollouts reached the sampler
    return expected


def test_a_log_lines_scalars_have_the_trackers_names():
    step = {"type": "step", "step": 3, "reward": 0.5, "family_reward": {"a/0": 0.25}, "groups": 2,
            "group_rewards": [{"key": "a/0", "index": 4, "rewards": [1.0, 0.0]}], "seconds": {"training": 1.5},
            "sampler": {"draws": 8.0, "key/a/0/draws": 8.0}, "loss": -0.1}
    assert record_scalars(step) == {
        "train/reward": 0.5, "train/family_reward/a/0": 0.25, "train/groups": 2.0, "train/seconds/training": 1.5,
        "train/sampler/draws": 8.0, "train/sampler/key/a/0/draws": 8.0, "train/loss": -0.1,
    }
    evaluation = {"type": "eval", "step": 3, "split": "test", "accuracy": {"a/0": 0.5, "b/0": 1.0},
                  "n": {"a/0": 2, "b/0": 2}, "overall": 0.75, "mean_reward": 0.75, "eval_episodes": 4,
                  "elapsed_s": 0.2, "episodes": 24.0, "cost": 60.0, "tokens": 60}
    assert record_scalars(evaluation) == {
        "openenv/eval/a/0/accuracy": 0.5, "openenv/eval/b/0/accuracy": 1.0, "openenv/eval/accuracy": 0.75,
        "openenv/sampler/episodes": 24.0, "openenv/sampler/cost": 60.0,
        "openenv/eval/n/a/0": 2.0, "openenv/eval/n/b/0": 2.0, "openenv/eval/mean_reward": 0.75,
        "openenv/eval/eval_episodes": 4.0, "openenv/eval/elapsed_s": 0.2, "openenv/eval/tokens": 60.0,
    }
    assert record_scalars({"type": "config_change", "step": 3, "changes": ["steps: 3 -> 6"]}) == {}


def test_report_to_may_change_on_resume(tmp_path):
    (tmp_path / "config.toml").write_text(dump_toml(config_from_dict({})))
    assert config_changes(tmp_path, config_from_dict({"report_to": ["tensorboard", "wandb"]})) == []


def test_a_missing_tracker_library_is_named_before_anything_loads(tmp_path, monkeypatch):
    from openenv_prime.mlx_trainer.report import trackers

    found = trackers.find_spec
    monkeypatch.setattr(trackers, "find_spec", lambda name: None if name == "wandb" else found(name))
    run_dir = tmp_path / "run"
    with pytest.raises(TrainingError) as err:  # no model there, no server: the check comes first
        train(_config(tmp_path / "no-model", "http://127.0.0.1:9", report_to=["tensorboard", "wandb"]), run_dir,
              progress=False)
    assert str(err.value) == ('report_to = ["wandb"] needs wandb, which is not installed: '
                              'pip install "openenv-prime[report]"')
    assert not run_dir.exists()


def test_tensorboard_holds_every_scalar_of_the_log_once_across_a_resume(tiny_model_dir, toy, tmp_path):
    for library in ("tensorboardX", "tensorboard"):
        pytest.importorskip(library, reason=f"{library} is not installed (the `report` extra)")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir = tmp_path / "run"
    expected = _expected(_run_then_resume(tiny_model_dir, toy, run_dir, ["tensorboard"]))
    events = EventAccumulator(str(run_dir / "tensorboard"), size_guidance={"scalars": 0}, purge_orphaned_data=False)
    events.Reload()
    logged: dict[tuple[str, int], float] = {}
    for tag in events.Tags()["scalars"]:
        for event in events.Scalars(tag):
            assert (tag, event.step) not in logged, f"{tag} logged twice at step {event.step}"
            logged[(tag, event.step)] = event.value
    assert logged.keys() == expected.keys()
    for key, value in expected.items():
        assert logged[key] == pytest.approx(value, rel=1e-6), key  # event files hold float32


def wandb_records(path: Path):
    """The protobuf records of a .wandb file: W&B's header, then LevelDB-log framing (32 KiB blocks of chunks, each
    with a CRC-32 of its type and data, a length and a type: full, first, middle, last)."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:7] == b":W&B\xe1\xbe\x00", "not a .wandb file of the format this reader knows"
    pos, pending = 7, b""
    while pos + 7 <= len(data):
        if 32768 - pos % 32768 < 7:  # a block's tail too short for a chunk header is padding
            pos += 32768 - pos % 32768
            continue
        crc, length = int.from_bytes(data[pos:pos + 4], "little"), int.from_bytes(data[pos + 4:pos + 6], "little")
        kind = data[pos + 6]
        chunk = data[pos + 7:pos + 7 + length]
        assert zlib.crc32(bytes([kind]) + chunk) == crc, f"bad checksum at byte {pos}"
        pos += 7 + length
        pending += chunk
        if kind in (1, 4):  # a full record, or the last chunk of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            pending = b""
            yield record


def test_wandb_offline_run_holds_every_scalar_of_the_log_once_across_a_resume(tiny_model_dir, toy, tmp_path,
                                                                              monkeypatch):
    monkeypatch.delenv("WANDB_MODE", raising=False)  # the trainer's default then: offline
    for var in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        monkeypatch.setenv(var, str(tmp_path / "wandb-home"))
    wandb = pytest.importorskip("wandb", reason="wandb is not installed (the `report` extra)")
    run_dir = tmp_path / "run"
    # W&B's core process writes the offline run's file after run.finish() returns; wandb.teardown() waits for it, as
    # the exit of an `openenv-prime train` process does.
    expected = _expected(_run_then_resume(tiny_model_dir, toy, run_dir, ["wandb"], after=wandb.teardown))

    run_id = (run_dir / "wandb" / "run_id").read_text().strip()
    runs = sorted((run_dir / "wandb").glob("offline-run-*"))
    assert [r.name.rsplit("-", 1)[1] for r in runs] == [run_id]  # the resumed session's run replaced the first's
    records = list(wandb_records(runs[0] / f"run-{run_id}.wandb"))
    run = next(r.run for r in records if r.WhichOneof("record_type") == "run")
    assert run.run_id == run_id and run.display_name == "run"
    config = {item.key: json.loads(item.value_json) for item in run.config.update}
    assert config["steps"] == 2 and config["report_to"] == ["wandb"] and config["lora"]["rank"] == 4
    rows: dict[int, dict[str, float]] = {}
    for r in records:
        if r.WhichOneof("record_type") == "history":
            assert r.history.step.num not in rows, f"step {r.history.step.num} logged twice"
            rows[r.history.step.num] = {"/".join(i.nested_key) or i.key: json.loads(i.value_json)
                                        for i in r.history.item}
    logged = {(name, step): value for step, row in rows.items() for name, value in row.items()
              if not name.startswith("_")}  # W&B's own _step, _runtime, _timestamp
    assert logged == expected
