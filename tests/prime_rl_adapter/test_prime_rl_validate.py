"""`openenv-prime prime-rl validate`: the shipped TOMLs pass; bad kwargs and a curriculum group
size that differs from the source's fail by name, without prime-rl."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv_prime.cli import main

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
