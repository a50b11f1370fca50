"""Check a prime-rl TOML's openenv_prime sampler settings without prime-rl or a server.

prime-rl passes a custom sampler's `kwargs` through untyped, so `rl --dry-run` accepts any of
them; this finds what the orchestrator would reject at start (or silently mispredict, like a
curriculum `group_size` that differs from the source's) before a cluster is booked."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openenv_prime.prime_rl_adapter.config import parse_kwargs
from openenv_prime.prime_rl_adapter.core import build_inner
from openenv_prime.samplers.task import Task

IMPORT_PATHS = {
    "openenv_prime.prime_rl_adapter.OpenEnvPrimeSampler",
    "openenv_prime.prime_rl_adapter.sampler.OpenEnvPrimeSampler",
}


@dataclass(frozen=True)
class SourceCheck:
    name: str
    problems: list[str]
    summary: str


def train_sources(config: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The train sources and their orchestrator table, in an `rl` or an `orchestrator` TOML."""
    orchestrator = config.get("orchestrator", config)
    return orchestrator.get("train", {}).get("source", []), orchestrator


def check_source(source: dict[str, Any], orchestrator: dict[str, Any]) -> SourceCheck | None:
    """None when the source does not use the openenv_prime sampler."""
    sampler = source.get("curriculum", {}).get("sampler", {})
    if sampler.get("type") != "custom" or sampler.get("import_path", "").replace(":", ".") not in IMPORT_PATHS:
        return None
    name = source.get("name", "<unnamed>")
    try:
        config = parse_kwargs(sampler.get("kwargs", {}))
        build_inner(config, [Task("check", 0, "family")])
    except ValueError as exc:
        return SourceCheck(name, [str(exc)], "")
    problems = []
    group_size = source.get("group_size", orchestrator.get("group_size"))
    predicted = config.sampler_kwargs.get("group_size")
    if config.sampler == "curriculum" and group_size is not None and predicted != group_size:
        problems.append(
            f"sampler_kwargs.group_size = {predicted!r} but the source's group_size is {group_size}: "
            f"the curriculum predicts signal for groups of the wrong size; set them equal"
        )
    summary = f"sampler {config.sampler!r}, family_field {config.family_field!r}, cost {config.cost!r}"
    return SourceCheck(name, problems, summary)


def check_file(path: Path) -> list[SourceCheck]:
    with open(path, "rb") as handle:
        config = tomllib.load(handle)
    sources, orchestrator = train_sources(config)
    return [check for source in sources if (check := check_source(source, orchestrator)) is not None]
