"""Config errors name the key; the embedded default and a dumped config load back equal."""

from __future__ import annotations

import subprocess
import sys

import pytest

from openenv_prime.mlx_trainer.config import ConfigError, config_from_dict, dump_toml, load_config
from tests.support.waiting import HANG_GUARD_S


def test_embedded_default_loads_and_uses_the_offline_model_and_embedded_server():
    cfg = load_config(None)
    assert cfg.model.path == "smollm2-135m"
    assert cfg.environment.base_url == "" and cfg.environment.embedded == "reasoning-gym"
    assert cfg.environment.test_split == "heldout" and cfg.environment.family_field == "family"
    assert cfg.sampler.name == "curriculum"


def test_the_chain_sum_config_loads():
    from pathlib import Path

    cfg = load_config(Path(__file__).parents[2] / "configs" / "mlx" / "chain-sum.toml")
    assert cfg.environment.embedded == "chain-sum" and cfg.environment.family_field == "tier"


def test_user_copy_of_default_matches_package_data():
    from pathlib import Path

    from openenv_prime.mlx_trainer.config import default_config_text

    assert Path(__file__).parents[2].joinpath("configs/mlx/default.toml").read_text() == default_config_text()


def test_unknown_key_is_named(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[grpo]\ngroup_sise = 8\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "grpo.group_sise" in str(err.value) and "unknown key" in str(err.value)


@pytest.mark.parametrize(
    "data, key",
    [
        ({"grpo": {"group_size": 1}}, "grpo.group_size"),
        ({"grpo": {"temperature": "hot"}}, "grpo.temperature"),
        ({"sampler": {"name": "random"}}, "sampler.name"),
        ({"lora": {"layers": 0}}, "lora"),
        ({"steps": 0}, "steps"),
        ({"environment": {"embedded": "chess"}}, "environment.embedded"),
        ({"environment": {"base_url": "ftp://x"}}, "environment.base_url"),
        ({"environment": {"reward_clip": [1.0, 0.0]}}, "environment.reward_clip"),
        ({"environment": {"reward_mode": "mean"}}, "environment.reward_mode"),
        ({"sampler": {"kwargs": {"gamma": 2.0}}}, "sampler.kwargs"),
        ({"sampler": {"kwargs": {"gama": 0.9}}}, "sampler.kwargs"),
        ({"sampler": {"log_keys": -1}}, "sampler.log_keys"),
        ({"grpo": {"group_size": 8}, "sampler": {"kwargs": {"group_size": 4}}}, "grpo.group_size"),
        ({"environment": {"embedded": "reasoning-gym", "datasets": ["products", "nope"]}}, "'nope'"),
        ({"environment": {"embedded": "reasoning-gym", "datasets": ["basic_arithmetic"], "tiers": 9}}, "environment.tiers"),
        ({"environment": {"embedded": "reasoning-gym", "datasets": []}}, "environment.datasets"),
        ({"environment": {"split_sizes": {"train": 40}}}, "environment.split_sizes"),
        ({"environment": {"embedded": "reasoning-gym", "split_sizes": {"dev": 4}}}, "environment.split_sizes"),
        ({"environment": {"embedded": "reasoning-gym", "split_sizes": {"train": 0}}}, "environment.split_sizes"),
    ],
)
def test_bad_value_is_named(data, key):
    with pytest.raises(ConfigError) as err:
        config_from_dict(data)
    assert key in str(err.value)


def test_report_to_takes_each_known_tracker_once():
    assert config_from_dict({}).report_to == []
    assert config_from_dict({"report_to": ["wandb", "tensorboard"]}).report_to == ["wandb", "tensorboard"]
    with pytest.raises(ConfigError) as err:
        config_from_dict({"report_to": ["tensorboard", "tensorbord"]})
    assert "report_to.1: Input should be 'tensorboard' or 'wandb' (got 'tensorbord')" in str(err.value)
    with pytest.raises(ConfigError, match="report_to: wandb listed more than once"):
        config_from_dict({"report_to": ["wandb", "wandb"]})


def test_invalid_toml_and_missing_file_are_clear(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("steps = = 3\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml")


def test_dump_toml_round_trips(tmp_path):
    cfg = config_from_dict({"seed": 3, "report_to": ["tensorboard"], "grpo": {"learning_rate": 2e-5, "system_prompt": 'say "x"\n'},
                            "sampler": {"name": "uniform", "kwargs": {"over": "keys"}},
                            "environment": {"base_url": "http://h:1", "observation_field": "question"}})
    path = tmp_path / "config.toml"
    path.write_text(dump_toml(cfg))
    assert load_config(path) == cfg


def test_the_eval_spelling_names_eval_fields_by_real_trainer_keys():
    """Every EvalConfig field the trainer's evals take from its config is named by the TOML key that sets it."""
    from openenv_prime.evaluation import EvalConfig
    from openenv_prime.mlx_trainer.config import MLX_EVAL_SPELLING, EnvironmentConfig, TrainConfig

    assert set(MLX_EVAL_SPELLING.exceptions) <= set(EvalConfig.model_fields)
    shared = set(EvalConfig.model_fields) & set(EnvironmentConfig.model_fields)
    for field in sorted(shared | set(MLX_EVAL_SPELLING.exceptions)):
        key = MLX_EVAL_SPELLING(field).split(" = ")[0]
        *section, name = key.split(".")
        model = TrainConfig.model_fields[section[0]].annotation if section else TrainConfig
        assert name in model.model_fields, (field, key)


def test_cli_reports_config_error_with_exit_code_2(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[lora]\nrank = -1\n")
    proc = subprocess.run([sys.executable, "-m", "openenv_prime", "train", str(path), "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert proc.returncode == 2
    assert "lora.rank" in proc.stderr
    assert not (tmp_path / "run").exists()


def test_sampler_group_size_equal_to_grpo_group_size_is_accepted():
    cfg = config_from_dict({"grpo": {"group_size": 4}, "sampler": {"kwargs": {"group_size": 4, "gamma": 0.9}}})
    assert cfg.sampler.kwargs["group_size"] == 4


def test_cli_rejects_bad_sampler_settings_before_loading_the_model(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[model]\npath = "/nonexistent/model"\n[sampler]\nkwargs = { gamma = 2.0 }\n'
                    '[environment]\nbase_url = "http://127.0.0.1:9"\n')
    proc = subprocess.run([sys.executable, "-m", "openenv_prime", "train", str(path), "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert proc.returncode == 2
    assert "sampler.kwargs" in proc.stderr and "gamma" in proc.stderr and "/nonexistent/model" not in proc.stderr
    assert not (tmp_path / "run").exists()
