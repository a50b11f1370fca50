"""Eval results as a Hugging Face dataset: `openenv-prime eval --save-dataset DIR` and `save_dataset` from an
in-training eval write parquet and a card that `datasets.load_dataset(DIR)` reads back (offline), with the columns
docs/evaluation.md documents; without `datasets` the command fails before the eval, naming the extra."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from openenv_prime.cli import main
from openenv_prime.evaluation import EvalConfig, EvalHarness, EvalSchedule
from openenv_prime.evaluation.dataset import save_dataset, split_name
from openenv_prime.samplers import Task, make_sampler
from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer, chain_sum_rule

datasets = pytest.importorskip("datasets")
from huggingface_hub import DatasetCard  # noqa: E402  (comes with datasets)

DOC = Path(__file__).resolve().parents[2] / "docs" / "evaluation.md"


def documented_columns(config: str) -> list[str]:
    """The column names docs/evaluation.md's table for ``config`` lists (the rows of the table after its heading)."""
    text = DOC.read_text()
    section = text.split(f"Columns of `{config}`", 1)[1]
    table = re.search(r"\n((?:\|.*\|\n)+)", section).group(1)
    return [m for row in table.splitlines()[2:] for m in re.findall(r"^\| `(\w+)`", row)]


def load(folder: Path, tmp_path: Path, config: str | None = None):
    return datasets.load_dataset(str(folder), config, cache_dir=str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def model_url():
    with ScriptedOpenAIServer(chain_sum_rule(correct_tiers={0, 2})) as url:
        yield url


def test_save_dataset_writes_what_load_dataset_reads_back(chain_sum_server, model_url, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out, folder = tmp_path / "report.json", tmp_path / "dataset"
    assert main(["eval", "--base-url", chain_sum_server, "--model", "scripted", "--model-base-url", model_url,
                 "--per-family", "2", "--out", str(out), "--save-dataset", str(folder),
                 "--env-dataset", "someone/chain-sum-env"]) == 0
    report = json.loads(out.read_text())

    episodes = load(folder, tmp_path)["test"]  # the default config
    assert episodes.column_names == documented_columns("episodes")
    assert [(r["family"], r["index"], r["reward"], r["reply"]) for r in episodes] == \
        [(r["family"], r["index"], r["reward"], r["reply"]) for r in report["results"]]
    for row in episodes:
        assert row["step"] is None and row["step_rewards"] == [row["reward"]]
        assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant"]
    families = load(folder, tmp_path, "families")["test"]
    assert families.column_names == documented_columns("families")
    assert [(f["family"], f["accuracy"]) for f in families] == [(f["family"], f["accuracy"]) for f in report["families"]]

    card = DatasetCard.load(folder / "README.md").data.to_dict()
    about = card["openenv_eval"]
    assert about["model"]["name"] == "scripted" and about["split"] == "test"
    assert about["environment"]["env_name"] == "chain_sum" and about["environment"]["server_version"]
    assert about["environment"]["dataset"] == "someone/chain-sum-env" == card["source_datasets"][0]
    assert about["environment"]["task_source"] == f"Task API at {chain_sum_server}"
    assert about["config"]["per_family"] == 2 and about["date"]


def test_an_in_training_eval_is_saved_with_its_step_and_the_samplers_counters(chain_sum_server, tmp_path):
    sampler = make_sampler("curriculum", [Task("train", i, key=str(i % 5)) for i in range(20)], group_size=2)
    for task in sampler.sample(3):
        sampler.update(task, [1.0, 0.0], [4, 6])
    harness = EvalHarness(EvalConfig(base_url=chain_sum_server, per_family=1, families=["0", "4"]),
                          EvalSchedule(steps=(7,), first=False), policy=lambda prompts: ["0"] * len(prompts),
                          on_result=lambda record, result: save_dataset(result, tmp_path / f"step-{record['step']}",
                                                                        record=record))
    harness.maybe_run(7, sampler, tokens=123)

    rows = load(tmp_path / "step-7", tmp_path)["test"]
    assert rows["step"] == [7, 7] and rows["family"] == ["0", "4"]
    training = DatasetCard.load(tmp_path / "step-7" / "README.md").data.to_dict()["openenv_eval"]["training"]
    assert (training["step"], training["episodes"], training["cost"], training["tokens"]) == (7, 6.0, 30.0, 123)


def test_without_datasets_the_command_stops_before_the_eval_naming_the_extra(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "400")  # rich wraps nothing
    monkeypatch.setitem(sys.modules, "datasets", None)  # `import datasets` now fails, as where it is not installed
    code = main(["eval", "--base-url", "http://127.0.0.1:9", "--model", "m", "--model-base-url", "http://127.0.0.1:9/v1",
                 "--out", str(tmp_path / "r.json"), "--save-dataset", str(tmp_path / "ds")])
    err = capsys.readouterr().err
    assert code == 2 and "--save-dataset" in err and "pip install 'openenv-prime[trl]'" in err
    assert not (tmp_path / "ds").exists() and not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("split, name", [("test", "test"), ("heldout", "heldout"), ("test-2", "test_2"),
                                         ("a b/c", "a_b_c"), ("---", "eval")])
def test_a_split_becomes_a_dataset_split_name(split, name):
    assert split_name(split) == name
