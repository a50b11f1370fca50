"""`run_eval` and `openenv-prime eval` on servers with a partial Task API, none (driven by a task list), or a reset
that ignores the task (tests/support/partial_task_api_server.py, under openenv 0.4.1 and 0.10.0); eval CLI parity."""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from pathlib import Path

import pytest

from openenv_prime.client.tasks.resetcheck import ResetIgnoredError
from openenv_prime.evaluation import EvalConfig, OpenAIPolicy, run_eval
from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer, last_user_text
from tests.evaluation.test_eval_cli import _eval
from tests.support.partial_task_api_server import seed_task_lines
from tests.support.processes import free_port, serving

_NUMBER = re.compile(r"Reply with the number (\d+)\.")


def even_only(request) -> str:
    """Says the asked number when it is even (level 0) and one more when it is odd (level 1)."""
    match = _NUMBER.search(last_user_text(request))
    if match is None:
        return "?"
    n = int(match.group(1))
    return str(n if n % 2 == 0 else n + 1)


@pytest.fixture(scope="module")
def model_url():
    with ScriptedOpenAIServer(even_only) as url:
        yield url


@pytest.fixture(scope="module")
def seeds_file(tmp_path_factory):
    """The no-task-api server's tasks: reset(seed=s) plays the number 10 + s; level is its parity."""
    path = tmp_path_factory.mktemp("tasks") / "seeds.jsonl"
    path.write_text("".join(line + "\n" for line in seed_task_lines()))
    return path


def _config(url: str, **fields) -> EvalConfig:
    return EvalConfig(base_url=url, family_field="level", per_family=10, system_prompt=None, **fields)


@pytest.mark.parametrize("kind", ["list-tasks-only", "no-splits"])
def test_partial_task_api_evaluates_per_family(partial_servers, model_url, kind):
    result = run_eval(_config(partial_servers[kind]), OpenAIPolicy(model_url, "scripted"))
    assert result.env_name == "say" and result.warnings == []
    assert result.accuracy_by_family() == {"0": 1.0, "1": 0.0}
    assert sorted(r.key for r in result.results) == [f"n-{n}" for n in range(11, 17)]
    assert all(r.done and not r.truncated and r.steps == 1 for r in result.results)
    assert all(r.reward == (1.0 if int(r.key[2:]) % 2 == 0 else 0.0) for r in result.results)


def test_task_list_evaluates_a_server_without_task_api(partial_servers, model_url, seeds_file):
    result = run_eval(_config(partial_servers["no-task-api"], tasks=str(seeds_file)), OpenAIPolicy(model_url, "scripted"))
    assert result.accuracy_by_family() == {"0": 1.0, "1": 0.0}
    assert [r.key for r in result.results] == ["seed-2", "seed-4", "seed-6", "seed-1", "seed-3", "seed-5"]
    assert all(r.success == (int(r.key[5:]) % 2 == 0) for r in result.results)


def test_without_task_api_or_task_list_the_error_says_pass_tasks(partial_servers, model_url):
    url = partial_servers["no-task-api"]
    with pytest.raises(Exception, match=r"no Task API.*--tasks FILE\.jsonl") as caught:
        run_eval(_config(url), OpenAIPolicy(model_url, "scripted"))
    assert url in str(caught.value)


def test_reset_ignoring_server_fails_before_any_episode(partial_servers):
    url = partial_servers["ignores-reset"]
    model = ScriptedOpenAIServer(even_only)
    with model as model_url:
        with pytest.raises(ResetIgnoredError, match=re.escape(url)):
            run_eval(_config(url), OpenAIPolicy(model_url, "scripted"))
    assert model.requests == []


def test_constant_reset_is_refused_once_it_plays_an_index_past_the_end(partial_servers, model_url):
    url = partial_servers["constant-reset"]
    with pytest.raises(ResetIgnoredError, match=r"played index 6.*its reset ignores \['index', 'split'\]"):
        run_eval(_config(url), OpenAIPolicy(model_url, "scripted"))


def test_seeds_that_all_start_alike_are_reported_as_a_warning(partial_servers, model_url, seeds_file):
    url = partial_servers["constant-reset"]  # its reset(seed) takes the seed and always plays the first task
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reported in the result for the caller to show, not raised as well
        result = run_eval(_config(url, tasks=str(seeds_file)), OpenAIPolicy(model_url, "scripted"))
    assert len(result.warnings) == 1 and url in result.warnings[0] and "may ignore its seed" in result.warnings[0]
    assert len(result.results) == 6


def test_a_callers_settings_are_named_in_the_eval_messages(partial_servers, model_url, seeds_file):
    """The MLX trainer runs its evals through run_eval: its user sets `environment.test_split`, not `--split`."""
    from openenv_prime.mlx_trainer.config import MLX_EVAL_SPELLING

    url, policy = partial_servers["list-tasks-only"], OpenAIPolicy(model_url, "scripted")
    listed = _config(partial_servers["no-task-api"], tasks=str(seeds_file), split="train")
    with pytest.raises(ValueError, match=re.escape("has no split 'train'; set environment.test_split to one of ['test']")):
        run_eval(listed, policy, spelling=MLX_EVAL_SPELLING)
    with pytest.raises(ValueError, match=r"no family field 'tier'.*environment\.family_field") as caught:
        run_eval(EvalConfig(base_url=url, family_field="tier", system_prompt=None), policy, spelling=MLX_EVAL_SPELLING)
    assert "--family-field" not in str(caught.value)
    result = run_eval(_config(partial_servers["constant-reset"], tasks=str(seeds_file)), policy, spelling=MLX_EVAL_SPELLING)
    (note,) = result.warnings
    assert "environment.check_reset = false skips this check" in note and "--no-reset-check" not in note
    with pytest.raises(ValueError, match=re.escape("set --split to one of ['test']")):  # eval's own flags otherwise
        run_eval(listed, policy)


def test_eval_cli_prints_the_reset_warning_once(partial_servers, model_url, seeds_file, tmp_path):
    run = _eval("--base-url", partial_servers["constant-reset"], "--tasks", str(seeds_file), "--family-field", "level",
                "--model", "scripted", "--model-base-url", model_url, "--out", str(tmp_path / "r.json"))
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("may ignore its seed") == 1 and "UserWarning" not in run.stderr and "asyncio" not in run.stderr
    assert "--no-reset-check skips this check" in run.stderr
    assert "warning: tasks 0, 1, 2 of split 'test'" in run.stderr


def test_eval_cli_with_a_task_list_and_no_families(partial_servers, model_url, seeds_file, tmp_path):
    out = tmp_path / "r.json"
    run = _eval("--base-url", partial_servers["no-task-api"], "--tasks", str(seeds_file), "--family-field", "none",
                "--model", "scripted", "--model-base-url", model_url, "--out", str(out), "--success-threshold", "0.5",
                "--reset-kwargs", "{}", "--max-invalid-actions", "0", "--id-field", "id")
    assert run.returncode == 0, run.stderr
    report = json.loads(out.read_text())
    assert [(f["family"], f["tasks"], f["solved"]) for f in report["families"]] == [("all", 6, 3)]
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in run.stdout.splitlines() if line.count("│") >= 5]
    assert [row[:3] for row in rows] == [["all", "6", "3"], ["total", "6", "3"]]  # the one family, then the total
    assert report["config"]["tasks"] == str(seeds_file) and report["config"]["success_threshold"] == 0.5
    assert {r["key"] for r in report["results"]} == {f"seed-{s}" for s in range(1, 7)}


def test_eval_cli_errors_name_flags_and_the_url(partial_servers, model_url, seeds_file, tmp_path):
    base = ["--model", "scripted", "--model-base-url", model_url, "--out", str(tmp_path / "r.json")]
    url = partial_servers["list-tasks-only"]
    run = _eval("--base-url", url, "--family-field", "tier", *base)
    assert run.returncode == 1 and "set --family-field" in run.stderr and url in run.stderr and "family_field=" not in run.stderr
    run = _eval("--base-url", partial_servers["ignores-reset"], "--family-field", "level", *base)
    assert run.returncode == 1 and partial_servers["ignores-reset"] in run.stderr and "--tasks" in run.stderr
    run = _eval("--base-url", url, "--reset-kwargs", '{"index": 2}', *base)
    assert run.returncode == 2 and "--reset-kwargs: reset_kwargs may not set ['index']" in run.stderr
    run = _eval("--base-url", url, "--reset-kwargs", "[1]", *base)
    assert run.returncode == 2 and "--reset-kwargs" in run.stderr and "JSON object" in run.stderr
    run = _eval("--base-url", partial_servers["no-task-api"], "--tasks", str(seeds_file), "--split", "train", *base)
    assert run.returncode == 1 and "has no split 'train'; set --split to one of ['test']" in run.stderr
    run = _eval("--base-url", url, "--tasks", str(tmp_path / "missing.jsonl"), "--family-field", "level", *base)
    assert run.returncode == 1 and "missing.jsonl: no such file" in run.stderr
    assert not (tmp_path / "r.json").exists()


def test_out_is_checked_before_the_eval_starts(tmp_path):
    dead = f"http://127.0.0.1:{free_port()}"  # nothing is contacted: the check comes first
    base = ["--base-url", dead, "--model", "m", "--model-base-url", "http://127.0.0.1:9/v1"]
    run = _eval(*base, "--out", str(tmp_path))
    assert run.returncode == 2 and "--out" in run.stderr and "is a directory" in run.stderr
    blocker = tmp_path / "file"
    blocker.write_text("")
    run = _eval(*base, "--out", str(blocker / "r.json"))
    assert run.returncode == 2 and "--out" in run.stderr and "cannot write the report" in run.stderr


def test_every_eval_config_field_has_a_flag_with_the_same_default():
    from openenv_prime.evaluation.cli import config_kwargs, register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["eval", "--model", "m", "--model-base-url", "http://h:1/v1"])
    assert EvalConfig(**config_kwargs(args, "http://127.0.0.1:8000")) == EvalConfig()
    help_text = parser._subparsers._group_actions[0].choices["eval"].format_help()
    flags = {name: EvalConfig.spelling(name) for name in EvalConfig.model_fields}
    assert [flag for flag in flags.values() if flag not in help_text] == []
    assert {action.dest for action in parser._subparsers._group_actions[0].choices["eval"]._actions} >= set(flags)


GUESS_SERVER = Path(__file__).resolve().parents[1] / "verifiers_taskset" / "guess_server.py"


def test_step_limit_cuts_off_multistep_episodes_and_counts_them_truncated(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with serving([sys.executable, str(GUESS_SERVER), str(port), "8"], f"{url}/health", tmp_path / "log"):
        with ScriptedOpenAIServer(lambda request: '{"guess": 0}') as wrong:  # never right: -0.25 per step
            config = EvalConfig(base_url=url, family_field="level", max_steps=3, check_reset=False)
            result = run_eval(config, OpenAIPolicy(wrong, "scripted"))
            assert EvalConfig().max_steps >= 8  # the default leaves multi-step episodes room
    assert result.truncated == 6 and [f.truncated for f in result.families] == [3, 3]
    assert all(r.truncated and not r.done and r.steps == 3 and r.reward == -0.75 for r in result.results)


class _HugeForTier1:
    """An in-process policy whose tier-1 replies are larger than the server accepts (uvicorn: 16 MiB)."""

    async def complete(self, prompts):
        from openenv_prime.testing.scripted_openai import chain_sum_terms

        replies = []
        for messages in prompts:
            terms = chain_sum_terms(messages[-1]["content"])
            replies.append("9" * (17 * 2**20) if len(terms) == 3 else str(sum(terms)))
        return replies


def test_a_reply_the_server_refuses_as_too_large_fails_its_episode_not_the_eval(chain_sum_server):
    config = EvalConfig(base_url=chain_sum_server, per_family=2, families=["0", "1", "2"], max_concurrency=3)
    result = run_eval(config, _HugeForTier1())
    assert result.accuracy_by_family() == {"0": 1.0, "1": 0.0, "2": 1.0}
    refused = [r for r in result.results if r.family == "1"]
    assert all(r.error and "too large" in r.error and not r.success and r.steps == 0 for r in refused)
    assert all(r.error is None for r in result.results if r.family != "1")
