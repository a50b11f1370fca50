"""Settings that would break a TRL run fail before it trains, with a message that names the setting."""

from __future__ import annotations

import pytest

from openenv_prime.trl import OpenEnvTRL, OpenEnvTRLConfig
from tests.support.processes import free_port
from tests.trl_integration.tiny import grpo_args


def test_a_wrong_base_url_names_base_url():
    with pytest.raises(Exception, match="base_url") as caught:
        OpenEnvTRL(OpenEnvTRLConfig(base_url=f"http://127.0.0.1:{free_port()}", timeout=2))
    assert "cannot reach" in str(caught.value)


def test_a_base_url_that_is_no_url_is_refused_by_the_config():
    with pytest.raises(ValueError, match="base_url"):
        OpenEnvTRLConfig(base_url="localhost:8000")


def test_a_server_without_a_task_api_names_the_task_list_setting(partial_servers):
    with pytest.raises(Exception, match="tasks") as caught:
        OpenEnvTRL(OpenEnvTRLConfig(base_url=partial_servers["no-task-api"], timeout=5))
    assert "Task API" in str(caught.value)


@pytest.fixture(scope="module")
def openenv(chain_sum_server):
    made = OpenEnvTRL(OpenEnvTRLConfig(base_url=chain_sum_server, group_size=4))
    yield made
    made.close()


@pytest.mark.parametrize("setting, message", [
    ({"num_generations": 8, "per_device_train_batch_size": 8}, r"num_generations=8 differs from the sampler's group_size=4"),
    ({"shuffle_dataset": True}, r"shuffle_dataset=True"),
    ({"ignore_data_skip": False}, r"ignore_data_skip=False"),
])
def test_grpo_settings_that_break_the_bookkeeping_are_refused_before_any_draw(openenv, tmp_path, setting, message):
    before = openenv.sampler.state_dict()
    with pytest.raises(ValueError, match=message):
        openenv.dataset(grpo_args(tmp_path, **setting))
    assert openenv.sampler.state_dict() == before and openenv.rows is None


def test_unknown_settings_and_reserved_reset_arguments_are_refused():
    with pytest.raises(ValueError, match="group_sise"):
        OpenEnvTRLConfig(group_sise=8)
    with pytest.raises(ValueError, match=r"reset_kwargs may not set \['index'\]"):
        OpenEnvTRLConfig(reset_kwargs={"index": 3})


def test_a_bad_sampler_setting_names_sampler_kwargs(chain_sum_server):
    with pytest.raises(ValueError, match="sampler_kwargs"):
        OpenEnvTRL(OpenEnvTRLConfig(base_url=chain_sum_server, sampler_kwargs={"no_such_setting": 1}))


def test_the_environment_factory_is_for_tool_mode(openenv):
    with pytest.raises(ValueError, match="tool_mode=True"):
        openenv.environment_factory()


def test_resuming_with_another_generation_batch_is_refused_naming_the_setting(openenv, tmp_path):
    openenv.dataset(grpo_args(tmp_path, per_device_train_batch_size=4))  # one row (task) per generation batch
    before = openenv.rows.state_dict()
    saved = {**before, "rows_per_batch": 2, "processes": 2}  # a checkpoint of two processes x 4 completions
    with pytest.raises(ValueError, match=r"held 2 rows .* this run's holds 1 .*ran on 2 process\(es\), this run on 1.*"
                                         r"per_device_train_batch_size"):
        openenv.rows.load_state_dict(saved)
    assert openenv.rows.state_dict() == before


def test_split_batches_is_refused_on_several_processes(openenv, tmp_path, monkeypatch):
    args = grpo_args(tmp_path, accelerator_config={"split_batches": True})
    openenv.check(args)  # one process: nothing to split
    monkeypatch.setattr(type(args), "world_size", property(lambda self: 2))  # as under torchrun, without a second process
    with pytest.raises(ValueError, match="split_batches=True"):
        openenv.check(args)


@pytest.mark.parametrize("strategy", ["epoch", "best"])
def test_save_strategies_that_would_save_a_stale_sampler_are_refused_naming_the_setting(openenv, tmp_path, strategy):
    extra = {"metric_for_best_model": "loss", "eval_strategy": "no"} if strategy == "best" else {}
    with pytest.raises(ValueError, match=f"save_strategy='{strategy}'.*use save_strategy='steps'"):
        openenv.check(grpo_args(tmp_path, save_strategy=strategy, **extra))
    openenv.check(grpo_args(tmp_path, save_strategy="no"))


def test_sessions_are_shared_between_the_processes_and_too_few_are_refused_naming_both_numbers(chain_sum_server):
    """max_sessions is the whole run's: one server serves every process (the embedded one admits 64 in all)."""
    made = OpenEnvTRL(OpenEnvTRLConfig(base_url=chain_sum_server, group_size=4, max_sessions=10))
    try:
        assert made.env.share_sessions(3) == 3 and made.env.session_limit == 3
        assert made.eval_config().max_concurrency == 3  # the eval's sessions too
        with pytest.raises(ValueError, match=r"max_sessions=10 .* fewer than its 12 processes; set max_sessions to at least 12"):
            made.env.share_sessions(12)
        assert made.env.session_limit == 3
    finally:
        made.close()


def test_tool_mode_with_more_rollouts_per_process_than_sessions_is_refused_naming_both(chain_sum_server, tmp_path):
    made = OpenEnvTRL(OpenEnvTRLConfig(base_url=chain_sum_server, group_size=4, max_sessions=6), tool_mode=True)
    try:
        with pytest.raises(ValueError, match=r"one session per rollout .*\(8 = GRPOConfig.generation_batch_size 8 / 1 "
                                             r"process\(es\)\), more than the 6 each process may open"):
            made.dataset(grpo_args(tmp_path))
        assert made.rows is None
    finally:
        made.close()


def test_a_test_split_the_server_does_not_list_is_refused_when_built_naming_the_splits(chain_sum_server):
    with pytest.raises(ValueError, match=r"has no split 'tset'; set test_split to one of \['train', 'test'\]"):
        OpenEnvTRL(OpenEnvTRLConfig(base_url=chain_sum_server, group_size=4, test_split="tset"))
    made = OpenEnvTRL(OpenEnvTRLConfig(base_url=chain_sum_server, group_size=4, test_split="test"))
    made.close()


def test_example_prompts_show_a_rows_chat_and_draw_nothing(openenv):
    before = openenv.sampler.state_dict()
    (prompt,) = openenv.example_prompts()
    assert prompt[-1]["role"] == "user" and "=" in prompt[-1]["content"]  # a chain_sum question, reset on the server
    assert openenv.sampler.state_dict() == before
