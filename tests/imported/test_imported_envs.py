"""A verifiers environment and an ORS environment, put through `openenv import` (openenv 0.10.0) and served with
`openenv-prime serve imported`: the eval, the verifiers taskset and the MLX trainer run on their native Task API
with no task list, no flags for the split or the families, and no wrapper of ours around the environment."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import httpx
import pytest

from openenv_prime.client import open_task_source
from openenv_prime.evaluation import EvalConfig, OpenAIPolicy, run_eval
from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer
from tests.imported.helpers import oracle, sum_in
from tests.verifiers_taskset.helpers import make_env, run_episodes

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["vf_sums_env", "ors_sums_env"])
def imported(request, imported_packages):
    """``(name, base_url)`` of each imported environment. (Naming ``imported_packages``, which the servers are built
    from, sends these tests to the pytest-xdist worker that has them: tests/conftest.py.)"""
    server = {"vf_sums_env": "vf_sums_server", "ors_sums_env": "ors_sums_server"}[request.param]
    return request.param, request.getfixturevalue(server)


def test_the_packages_serve_their_own_task_api_and_reset_from_the_spec(vf_sums_server, ors_sums_server):
    for url, name, splits in ((vf_sums_server, "vf_sums_env", ["train", "eval"]), (ors_sums_server, "ors_sums_env", ["train", "test"])):
        assert httpx.get(f"{url}/list_environments", timeout=30).json() == [name]
        with open_task_source(url) as source:
            assert source.splits() == splits and source.kind == "task api"
            spec = source.specs(splits[1])[3]
            # the wrappers look a task up by listing its whole split; the spec itself plays the same task
            assert source.reset_kwargs(splits[1], 3) == {"task_spec": spec} and source.by_spec is True
    assert set(spec) == {"id", "a", "b"}  # the ORS task: no gold answer in it
    with open_task_source(vf_sums_server) as source:
        row = source.specs("eval")[0]
    assert {"question", "answer", "prompt", "info"} <= set(row) and row["answer"] == sum_in(row["question"])


def test_eval_plays_the_test_split_by_the_rule_with_one_family(imported):
    name, url = imported
    with ScriptedOpenAIServer(oracle(name)) as model_url:
        result = run_eval(EvalConfig(base_url=url), OpenAIPolicy(model_url, "scripted"))
    assert result.env_name == name and result.family_field is None
    assert [f.family for f in result.families] == ["all"] and len(result.results) == 8
    assert all(r.reward == 1.0 and r.success and r.done and r.invalid_actions == 0 for r in result.results)
    if name == "vf_sums_env":  # verifiers' held-out split is `eval`; the output says the rule chose it
        assert result.split == "eval"
        assert any("split 'eval'" in note and "no 'test'" in note for note in result.choices)
    else:
        assert result.split == "test" and not any(note.startswith("split") for note in result.choices)


def test_eval_cli_says_which_split_it_chose(vf_sums_server, tmp_path):
    out = tmp_path / "report.json"
    with ScriptedOpenAIServer(oracle("vf_sums_env")) as model_url:
        run = subprocess.run(
            [sys.executable, "-m", "openenv_prime", "eval", "--base-url", vf_sums_server, "--model", "scripted",
             "--model-base-url", model_url, "--per-family", "3", "--out", str(out)],
            capture_output=True, text=True, timeout=300, env=dict(os.environ, COLUMNS="150"), cwd=ROOT,
        )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "split 'eval': the server lists no 'test' split" in run.stderr
    report = json.loads(out.read_text())
    assert report["split"] == "eval" and report["accuracy"] == 1.0 and len(report["results"]) == 3


def test_taskset_loads_every_split_and_scores_episodes(imported):
    name, url = imported
    env = make_env(url, max_sessions=1)  # the wrappers serve one session at a time
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tasks = list(env.taskset)
    noted = " ".join(str(w.message) for w in caught)
    if name == "vf_sums_env":  # verifiers' rows have no `id`, but their own `example_id` (counted per split)
        assert "have no id field 'id'" in noted and "set --env.taskset.id-field example_id" in noted
    splits = {"vf_sums_env": {"train": 24, "eval": 8}, "ors_sums_env": {"train": 24, "test": 8}}[name]
    assert {split: sum(t.data.split == split for t in tasks) for split in splits} == splits
    assert {t.data.family for t in tasks} == {"all"}
    assert all(t.data.reset == {"task_spec": t.data.spec} for t in tasks)
    with ScriptedOpenAIServer(oracle(name)) as model_url:
        episodes = asyncio.run(run_episodes(env, [tasks[0], tasks[-1]], model_url, rollouts=2))
    assert len(episodes) == 4
    for episode in episodes:
        (trace,) = episode.traces
        assert episode.ok and trace.reward == 1.0 and trace.stop_condition == "openenv_done"


def test_trainer_runs_two_steps_and_evaluates_the_test_split(imported, tmp_path, capfd):
    from openenv_prime.mlx_trainer.config import config_from_dict
    from openenv_prime.mlx_trainer.model.sources import build_tiny_model
    from openenv_prime.mlx_trainer.training.loop import train

    name, url = imported
    model = build_tiny_model(tmp_path / "tiny")
    config = config_from_dict({
        "seed": 0, "steps": 2, "plot": False, "model": {"path": str(model)},
        "grpo": {"group_size": 2, "tasks_per_step": 2, "max_new_tokens": 8},
        "environment": {"base_url": url, "max_sessions": 1, "max_invalid_actions": 0},
        "eval": {"every": 2, "tasks_per_family": 2}, "checkpoint": {"every": 2},
    })
    result = train(config, tmp_path / "run", progress=False)
    assert result.state.finished and result.state.step == 2
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    steps = [line for line in log if line["type"] == "step"]
    evals = [line for line in log if line["type"] == "eval"]
    assert [s["step"] for s in steps] == [1, 2] and [s["episodes"] for s in steps] == [4, 8]
    assert all(s["family_reward"].keys() == {"all"} for s in steps)
    assert [e["step"] for e in evals] == [0, 2] and all(e["n"] == {"all": 2} for e in evals)
    errors = capfd.readouterr().err
    assert "families: one group" in errors  # the trainer says the tasks have no family field
    assert ("eval: split 'eval'" in errors) == (name == "vf_sums_env")


def _serve_imported(package: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "openenv_prime.envs", "serve", "imported", str(package), "--port", "0"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_serve_imported_says_what_is_wrong_before_serving(tmp_path):
    run = _serve_imported(tmp_path)
    assert run.returncode != 0 and f"{tmp_path} is not a package made by `openenv import`" in run.stderr
    package = tmp_path / "broken_env"
    (package / "server").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "server" / "__init__.py").write_text("")
    (package / "server" / "broken_env_environment.py").write_text("import no_such_module_of_the_source\n")
    (package / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["openenv>=0.2.2", "no-such-module-of-the-source>=1"]\n')
    run = _serve_imported(package)
    assert run.returncode != 0 and "No module named 'no_such_module_of_the_source'" in run.stderr
    assert "install what the source environment needs in this interpreter (no-such-module-of-the-source>=1)" in run.stderr
