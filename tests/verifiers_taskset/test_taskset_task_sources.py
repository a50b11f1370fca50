"""The taskset on servers with a partial Task API, none (driven by a task list), or a reset that ignores the task
(tests/support/partial_task_api_server.py, under openenv 0.4.1 and 0.10.0): in-process and through `vf-eval`."""

from __future__ import annotations

import pytest

from openenv_prime.client.tasks.resetcheck import ResetIgnoredError
from openenv_prime.client.wire.errors import RouteNotSupportedError
from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer
from openenv_prime.verifiers_taskset import OpenEnvTaskset, OpenEnvTasksetConfig
from tests.evaluation.test_eval_task_sources import even_only
from tests.support.partial_task_api_server import TASKS, seed_task_lines
from tests.verifiers_taskset.test_taskset_cli_and_env_server import read_traces, vf_eval


def _load(url: str, **fields) -> list:
    return list(OpenEnvTaskset(OpenEnvTasksetConfig(id="openenv-prime", base_url=url, **fields)))


@pytest.fixture(scope="module")
def seeds_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("tasks") / "seeds.jsonl"
    path.write_text("".join(line + "\n" for line in seed_task_lines()))
    return path


@pytest.mark.parametrize("kind", ["list-tasks-only", "no-splits"])
def test_partial_task_api_loads_with_named_splits(partial_servers, kind):
    tasks = _load(partial_servers[kind], splits=["test"], family_field="level")
    assert [t.key for t in tasks] == [f"say/test/{spec['id']}" for spec in TASKS]
    assert [t.data.family for t in tasks] == [str(spec["level"]) for spec in TASKS]
    assert all(t.data.reset is None and "reset" not in t.data.model_dump(exclude_none=True) for t in tasks)


def test_without_list_splits_and_no_splits_named_the_error_says_which_setting(partial_servers):
    url = partial_servers["no-splits"]
    with pytest.raises(RouteNotSupportedError, match=r"does not list its splits.*--env.taskset.splits") as caught:
        _load(url, family_field="level")
    assert url in str(caught.value)


def test_task_list_tasks_carry_their_reset_arguments(partial_servers, seeds_file):
    tasks = _load(partial_servers["no-task-api"], tasks=str(seeds_file), family_field="level")
    assert [t.key for t in tasks] == [f"say/test/seed-{s}" for s in range(1, 7)]
    assert [t.data.reset for t in tasks] == [{"seed": s} for s in range(1, 7)]
    assert [t.data.family for t in tasks] == [str((10 + s) % 2) for s in range(1, 7)]
    assert _load(partial_servers["no-task-api"], tasks=str(seeds_file), splits=["test"], family_field=None)[0].data.family == "all"


def test_reset_ignoring_server_fails_at_load(partial_servers):
    url = partial_servers["ignores-reset"]
    with pytest.raises(ResetIgnoredError, match=r"does not play the task") as caught:
        _load(url, family_field="level")
    assert url in str(caught.value) and "--tasks" in str(caught.value)


def test_missing_family_field_is_an_error_naming_the_setting(partial_servers, seeds_file):
    with pytest.raises(ValueError, match=r"no family field 'tier'.*--env.taskset.family-field.*null for no families"):
        _load(partial_servers["list-tasks-only"], splits=["test"], family_field="tier")
    with pytest.raises(ValueError, match=r"task list .*seeds.jsonl.*no family field 'tier'"):
        _load(partial_servers["no-task-api"], tasks=str(seeds_file), family_field="tier")


def test_vf_eval_with_a_task_list_on_a_server_without_task_api(partial_servers, seeds_file, tmp_path):
    out = tmp_path / "outputs"
    with ScriptedOpenAIServer(even_only) as model_url:
        done = vf_eval(partial_servers["no-task-api"], model_url, out, "--env.taskset.tasks", str(seeds_file),
                       "--env.taskset.family-field", "level", "-n", "6")
    assert done.returncode == 0, done.stderr[-3000:]
    episodes = read_traces(out)
    assert sorted(e["task"]["key"] for e in episodes) == [f"say/test/seed-{s}" for s in range(1, 7)]
    for episode in episodes:
        data = episode["task"]["data"]
        (trace,) = episode["traces"]
        seed = data["reset"]["seed"]
        assert data["family"] == str((10 + seed) % 2)
        assert trace["rewards"]["openenv_return"]["score"] == (1.0 if seed % 2 == 0 else 0.0)


def test_vf_eval_without_an_id_field_warns_with_the_setting(partial_servers, tmp_path):
    out = tmp_path / "outputs"
    with ScriptedOpenAIServer(even_only) as model_url:
        done = vf_eval(partial_servers["list-tasks-only"], model_url, out, "--env.taskset.splits", '["test"]',
                       "--env.taskset.family-field", "level", "--env.taskset.id-field", "task_id", "-n", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "no id field 'task_id'" in done.stderr and "set --env.taskset.id-field id (id_field = 'id')" in done.stderr


def test_vf_eval_on_a_reset_ignoring_server_fails_naming_the_url_and_the_fix(partial_servers, tmp_path):
    url = partial_servers["ignores-reset"]
    with ScriptedOpenAIServer(even_only) as model_url:
        done = vf_eval(url, model_url, tmp_path / "outputs", "--env.taskset.family-field", "level", "-n", "2")
    assert done.returncode != 0
    assert "does not play the task it is asked for" in done.stderr and url in done.stderr
    assert "openenv-prime serve MODULE:CLASS --tasks" in done.stderr
