"""`openenv-prime eval --mlx RUN`: an MLX trainer's run evaluated in this process, no model server, with the settings
of the run's own evals, asks and answers exactly what the run's last in-training eval did."""

from __future__ import annotations

import json

import pytest

from trainer_helpers import SMALL_VOCAB, format_sft_model, toy_server

from openenv_prime.cli import main
from openenv_prime.evaluation.episodes import read_episodes
from openenv_prime.mlx_trainer.config import config_from_dict
from openenv_prime.mlx_trainer.training.loop import train

STEPS = 3


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A 3-step run (evals at 0 and 3, a checkpoint every step) on the toy server, which stays up for the evals."""
    from openenv_prime.mlx_trainer.model.sources import build_tiny_model

    root = tmp_path_factory.mktemp("saved-run")
    base = format_sft_model(build_tiny_model(root / "random", vocab=SMALL_VOCAB), root / "base", ["say 7:"])
    with toy_server("0") as (url, _):
        config = config_from_dict({
            "steps": STEPS, "plot": False, "model": {"path": str(base)}, "lora": {"rank": 4, "layers": -1},
            "grpo": {"group_size": 4, "tasks_per_step": 4, "max_new_tokens": 3, "learning_rate": 3e-2},
            "environment": {"base_url": url, "family_field": "level", "observation_field": "question"},
            "eval": {"every": 0, "tasks_per_family": 6},
        })
        train(config, root / "run", progress=False)
        yield url, root / "run"


def episodes_by_task(rows, step=None):
    return {(r["split"], r["index"]): r for r in rows if step is None or r["step"] == step}


@pytest.mark.parametrize("which", ["run", "checkpoint"])
def test_a_saved_run_evaluated_here_answers_as_its_last_eval(trained, tmp_path, which, capsys):
    url, run = trained
    target = run if which == "run" else run / "checkpoints" / f"step_{STEPS:06d}"
    report = tmp_path / "eval.json"
    where = [] if which == "run" else ["--base-url", url]  # without it, the run's own server (its base_url)
    code = main(["eval", *where, "--mlx", str(target), "--out", str(report)])
    assert code == 0, capsys.readouterr().err
    document = json.loads(report.read_text())
    assert document["model"]["checkpoint"] == f"step_{STEPS:06d}" and document["model"]["max_tokens"] == 3
    # the run's eval settings, not the flags' defaults: its family field, tasks per family, test split
    assert document["config"]["family_field"] == "level" and document["config"]["per_family"] == 6
    assert document["split"] == "test" and document["config"]["base_url"] == url
    here = episodes_by_task(read_episodes(tmp_path / "eval.episodes.jsonl"))
    logged = read_episodes(run / "episodes.jsonl")
    last, first = episodes_by_task(logged, STEPS), episodes_by_task(logged, 0)
    assert len(here) == 6 and len(last) == 4 and last.keys() <= here.keys()  # the run kept 4 of the 6 (its default)
    for key, row in last.items():  # the same prompts (the run's system prompt), replies and rewards
        assert (here[key]["messages"], here[key]["reward"], here[key]["tokens"]) == (
            row["messages"], row["reward"], row["tokens"])
    evals = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert document["accuracy"] == [e for e in evals if e.get("type") == "eval"][-1]["overall"]
    # the run moved the adapters: the untrained model answered otherwise, so the match above is the checkpoint's
    assert any(first[key]["messages"] != here[key]["messages"] for key in last)


def test_a_flag_given_wins_over_the_runs_setting(trained, tmp_path, capsys):
    url, run = trained
    report = tmp_path / "eval.json"
    assert main(["eval", "--base-url", url, "--mlx", str(run), "--per-family", "2", "--max-tokens", "1",
                 "--out", str(report)]) == 0, capsys.readouterr().err
    document = json.loads(report.read_text())
    assert document["config"]["per_family"] == 2 and document["config"]["family_field"] == "level"
    assert document["model"]["max_tokens"] == 1 and len(document["results"]) == 2


def test_a_folder_that_is_no_run_is_refused(tmp_path, capsys):
    assert main(["eval", "--mlx", str(tmp_path), "--out", str(tmp_path / "r.json")]) == 2
    assert "neither an `openenv-prime train` run directory" in capsys.readouterr().err
