"""`openenv-prime prime-rl validate`: the shipped TOMLs pass; bad kwargs and a curriculum group
size that differs from the source's fail by name, without prime-rl."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv_prime.cli import main
from openenv_prime.prime_rl_adapter.validate import IMPORT_PATHS

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs" / "prime-rl").glob("*.toml"))


def test_shipped_configs_validate(capsys: pytest.CaptureFixture[str]) -> None:
    assert CONFIGS
    assert main(["prime-rl", "validate", *map(str, CONFIGS)]) == 0
    out = capsys.readouterr().out
    assert out.count(": ok (") == len(CONFIGS)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('family_field = "family"', 'famliy_field = "family"', "kwargs.famliy_field: Extra inputs"),
        ("gamma = 0.9", "gamma = 1.5", "gamma"),
        ('sampler = "curriculum"', 'sampler = "greedy"', "unknown sampler 'greedy'"),
        ("group_size = 8                #", "group_size = 4                #", "sampler_kwargs.group_size = 4"),
    ],
)
def test_bad_settings_fail_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, message: str
) -> None:
    text = CONFIGS[0].read_text()
    assert old in text
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace(old, new, 1))
    assert main(["prime-rl", "validate", str(bad)]) == 1
    assert message in capsys.readouterr().out


def test_a_config_without_the_sampler_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = tmp_path / "plain.toml"
    plain.write_text('[[orchestrator.train.source]]\nname = "x"\n[orchestrator.train.source.env.taskset]\nid = "y"\n')
    assert main(["prime-rl", "validate", str(plain)]) == 1
    assert "no train source uses" in capsys.readouterr().out


@pytest.mark.parametrize(
    "misspelt",
    [
        "openenv_prime.prime_rl_adapter.OpenEnvPrimeSamplr",  # a letter left out (the typo)
        "openenv_prime.prime_rl_adapter:OpenEnvPrimeSamplr",  # in the colon form
        "openenv_prime.prime_rl_adaptor.OpenEnvPrimeSampler",  # the module
        "openenv_prime.samplers.CurriculumSampler",  # a class of this package that is no prime-rl sampler
    ],
)
def test_a_misspelt_import_path_is_named_with_the_closest_right_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], misspelt: str
) -> None:
    """prime-rl's dry run does not import the path, so the typo would show only at orchestrator start."""
    text = CONFIGS[0].read_text()
    right = 'import_path = "openenv_prime.prime_rl_adapter.OpenEnvPrimeSampler"'
    assert right in text
    bad = tmp_path / "typo.toml"
    bad.write_text(text.replace(right, f'import_path = "{misspelt}"'))
    assert main(["prime-rl", "validate", str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"import_path = {misspelt!r} names no sampler in openenv_prime" in out
    meant = out.split("did you mean ", 1)[1].split("?", 1)[0].strip("'")
    assert meant in IMPORT_PATHS  # a path that works: the sampler, by its package or by its module
    assert "no train source uses" not in out


def test_another_packages_sampler_is_left_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = CONFIGS[0].read_text().replace("openenv_prime.prime_rl_adapter.OpenEnvPrimeSampler", "my_lab.samplers.Mine")
    other = tmp_path / "other.toml"
    other.write_text(text)
    assert main(["prime-rl", "validate", str(other)]) == 1
    out = capsys.readouterr().out
    assert "no train source uses" in out and "did you mean" not in out
