"""One `ServerSettings` for every consumer's config, every field's text in its class, one spelling per consumer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from openenv_prime.client.server_settings import LOCAL_SERVER, ServerSettings, Spelling
from openenv_prime.evaluation import EvalConfig
from openenv_prime.mlx_trainer.config import EnvironmentConfig, TrainConfig

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _consumers() -> list[type[BaseModel]]:
    configs: list[type[BaseModel]] = [EvalConfig, EnvironmentConfig]
    for module, name in (("openenv_prime.trl.config", "OpenEnvTRLConfig"),
                         ("openenv_prime.verifiers_taskset.config", "OpenEnvTasksetConfig")):
        try:
            configs.append(getattr(__import__(module, fromlist=[name]), name))
        except ImportError:  # an extra that is not installed
            pass
    return configs


@pytest.mark.parametrize("config", _consumers(), ids=lambda c: c.__name__)
def test_every_consumer_takes_the_server_fields_from_the_one_declaration(config):
    for name, declared in ServerSettings.model_fields.items():
        assert config.model_fields[name].description == declared.description, name
    default = config().base_url if config is not EnvironmentConfig else config(base_url=LOCAL_SERVER).base_url
    assert default == LOCAL_SERVER
    with pytest.raises(ValidationError, match="base_url"):
        config(base_url="ftp://127.0.0.1:8000")


def test_only_the_mlx_trainer_reads_an_empty_url_as_its_own_server():
    assert EnvironmentConfig().base_url == "" and EnvironmentConfig(base_url="").base_url == ""
    with pytest.raises(ValidationError, match="base_url"):
        EvalConfig(base_url="")


def _fields(model: type[BaseModel], prefix: str = "") -> list[tuple[str, object]]:
    """Every (dotted name, field) of ``model`` and its sections that this package declares (not verifiers' own)."""
    out = []
    for name, info in model.model_fields.items():
        owner = next(cls for cls in model.__mro__ if name in getattr(cls, "__annotations__", {}))
        if not owner.__module__.startswith("openenv_prime"):
            continue
        out.append((prefix + name, info))
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            out += _fields(info.annotation, f"{prefix}{name}.")
    return out


@pytest.mark.parametrize("config", [*_consumers(), TrainConfig], ids=lambda c: c.__name__)
def test_every_config_field_has_its_text_in_the_class(config):
    fields = _fields(config)
    assert len(fields) >= 10
    assert [name for name, info in fields if not info.description] == []


def _taskset():
    try:
        from openenv_prime.verifiers_taskset.config import OpenEnvTasksetConfig
    except ImportError:
        return None
    return OpenEnvTasksetConfig


def test_the_mlx_docs_table_names_every_config_key():
    text = (DOCS / "mlx.md").read_text()
    table = text[text.index("**Config keys**"):text.index("**Run directory:**")]
    named = set()
    for cell in re.findall(r"^\| (.+?) \|", table, flags=re.M):
        section = ""
        for key in re.findall(r"`([\w.]+)`", cell):
            if key.startswith("."):
                key = section + key[1:]
            section = key.rsplit(".", 1)[0] + "." if "." in key else ""
            named.add(key)
    sections = {name for name, info in TrainConfig.model_fields.items() if isinstance(info.annotation, type)
                and issubclass(info.annotation, BaseModel)}
    assert sorted(name for name, _ in _fields(TrainConfig) if name not in named and name not in sections) == []


def test_the_taskset_refuses_its_old_timeouts_naming_the_one_that_replaced_them():
    taskset = _taskset()
    if taskset is None:
        pytest.skip("verifiers is not installed (the `verifiers` extra)")
    with pytest.raises(ValidationError, match=r"message_timeout: one setting now, timeout .* --env\.taskset\.timeout"):
        taskset(message_timeout=5.0)


def test_a_spelling_names_fields_by_its_pattern_and_its_exceptions():
    flags = Spelling("--{kebab}", {"check_reset": "--no-reset-check"}, none="none")
    assert flags("max_steps") == "--max-steps" and flags("check_reset") == "--no-reset-check"
    trainer_eval = Spelling("environment.{name}").but(split="environment.test_split")
    assert trainer_eval("split") == "environment.test_split" and trainer_eval("timeout") == "environment.timeout"
    assert EvalConfig.spelling("invalid_errors") == "--no-invalid-errors" and EvalConfig.spelling.none == "none"
