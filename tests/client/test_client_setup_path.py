"""One setup path: the eval, the MLX trainer, TRL and the verifiers taskset ask the server through
`EnvironmentSetup.prepare` with their own spelling of the settings, so the split the reset check runs on is the split chosen, every consumer passes its reset
arguments to the check, and a split without tasks is one error, worded alike."""

from __future__ import annotations

import asyncio

import pytest

from openenv_prime.client.server_settings import ServerSettings, Spelling
from openenv_prime.client.setup import EnvironmentSetup, Prepared
from tests.support import rules_script


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """tests/support/rules_server.py: one split, `test`, and a reset that takes any extra argument."""
    with rules_script.rules_server(tmp_path_factory.mktemp("rules") / "server.log") as url:
        yield url


@pytest.fixture
def prepared(monkeypatch):
    """Every call of EnvironmentSetup.prepare: (split asked, names, the split chosen, the reset arguments checked)."""
    calls: list[tuple] = []
    prepare, check = EnvironmentSetup.prepare, EnvironmentSetup.check_reset_sync

    def recording_prepare(self, split, settings, names, **kw) -> Prepared:
        found = prepare(self, split, settings, names, **kw)
        calls.append((split, names, found.split, self.checked))
        return found

    def recording_check(self, split, num_tasks, **kw):
        self.checked = (split, kw.get("extra"))
        return check(self, split, num_tasks, **kw)

    monkeypatch.setattr(EnvironmentSetup, "checked", None, raising=False)
    monkeypatch.setattr(EnvironmentSetup, "prepare", recording_prepare)
    monkeypatch.setattr(EnvironmentSetup, "check_reset_sync", recording_check)
    return calls


class Zero:
    async def complete(self, prompts):
        return ["0"] * len(prompts)


def test_the_eval_prepares_through_the_one_path_and_checks_the_split_it_chose(server, prepared):
    from openenv_prime.evaluation import EvalConfig, run_eval

    run_eval(EvalConfig(base_url=server, per_family=1, family_field="kind", reset_kwargs={"note": "x"}), Zero())
    ((asked, names, chosen, checked),) = prepared
    assert (asked, chosen, checked) == (None, "test", ("test", {"note": "x"}))  # the test split by rule, checked
    assert [names(key) for key in ("split", "family_field", "action_field", "check_reset")] == [
        "--split", "--family-field", "--action-field", "--no-reset-check"]


def test_trl_prepares_through_the_one_path(server, prepared):
    pytest.importorskip("trl", reason="TRL is not installed (the `trl` extra)")
    from openenv_prime.trl import OpenEnvTRL, OpenEnvTRLConfig

    OpenEnvTRL(OpenEnvTRLConfig(base_url=server, group_size=4, train_split="test", reset_kwargs={"note": "x"})).close()
    ((asked, names, chosen, checked),) = prepared
    assert (asked, chosen, checked) == ("test", "test", ("test", {"note": "x"}))
    assert names("split") == "train_split" and names("check_reset") == "OpenEnvTRLConfig(check_reset=False)"


def test_the_mlx_trainer_prepares_through_the_one_path_with_its_reset_arguments(server, prepared, tmp_path):
    from openenv_prime.mlx_trainer.config import config_from_dict
    from openenv_prime.mlx_trainer.model.sources import build_tiny_model
    from openenv_prime.mlx_trainer.training.setup import build_parts
    from openenv_prime.mlx_trainer.worker import MainThreadMLX

    config = config_from_dict({"model": {"path": str(build_tiny_model(tmp_path / "tiny"))}, "plot": False,
                               "environment": {"base_url": server, "train_split": "test", "test_split": "test",
                                               "reset_kwargs": {"note": "x"}}})
    mlx = MainThreadMLX()

    async def build():
        parts = await build_parts(config, server, mlx, {"group_size": config.grpo.group_size})
        await parts.runner.close()
        return parts

    parts = mlx.drive(build())
    ((asked, names, chosen, checked),) = prepared
    assert (asked, chosen, checked) == ("test", "test", ("test", {"note": "x"}))
    assert names("split") == "environment.train_split" and names("family_field") == "environment.family_field"
    task = parts.sampler.sample(1)[0]
    assert parts.runner.reset_kwargs(task) == {"note": "x", "split": "test", "index": task.index}


def test_the_taskset_prepares_each_split_through_the_one_path_and_checks_the_first(server, prepared):
    pytest.importorskip("verifiers", reason="verifiers is not installed (the `verifiers` extra)")
    from openenv_prime.verifiers_taskset.config import OpenEnvTasksetConfig
    from openenv_prime.verifiers_taskset.taskset import OpenEnvTaskset

    config = OpenEnvTasksetConfig(base_url=server, family_field="kind", reset_kwargs={"note": "x"})
    tasks = OpenEnvTaskset(config).load()
    ((asked, names, chosen, checked),) = prepared  # the rules server lists one split
    assert (asked, chosen, checked) == ("test", "test", ("test", {"note": "x"}))
    assert names("split") == "--env.taskset.splits" and names("family_field").startswith("--env.taskset.family-field")
    assert tasks and {task.data.family for task in tasks} == {str(task.data.spec["kind"]) for task in tasks}


def test_a_split_without_tasks_is_one_error_worded_alike(server, tmp_path):
    """Every consumer gets the same ValueError from the one path, naming its own setting."""
    from openenv_prime.client.engine.episode_settings import ResetArguments
    from openenv_prime.client.prompts.prompting import PromptSettings

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"split": "train", "id": "a", "reset": {"seed": 1}}\n')

    class Settings(ServerSettings, PromptSettings, ResetArguments):
        pass

    settings = Settings(base_url=server, tasks=str(tasks), family_field=None, check_reset=False, timeout=5.0)
    with EnvironmentSetup.of(settings) as setup:
        with pytest.raises(ValueError, match=r"train_split: split 'train' of .* has no tasks; choose another split"):
            setup.prepare("train", settings, Spelling("{name}", {"split": "train_split"}), choose=lambda found: [])
        assert asyncio.iscoroutinefunction(setup.check_reset)  # the async check stays for callers inside a loop
