"""Check a prime-rl TOML's openenv_prime sampler settings without prime-rl or a server.

prime-rl passes a custom sampler's `kwargs` through untyped, so `rl --dry-run` accepts any of
them; this finds what the orchestrator would reject at start (or silently mispredict, like a
curriculum `group_size` that differs from the source's) before a cluster is booked."""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openenv_prime.prime_rl_adapter.config import KWARGS_PATH, parse_kwargs
from openenv_prime.prime_rl_adapter.core import build_inner
from openenv_prime.samplers.task import Task

IMPORT_PATH = "openenv_prime.prime_rl_adapter.OpenEnvPrimeSampler"
IMPORT_PATHS = {IMPORT_PATH, "openenv_prime.prime_rl_adapter.sampler.OpenEnvPrimeSampler"}

SAMPLER_PATH = KWARGS_PATH.removesuffix(".kwargs")


@dataclass(frozen=True)
class SourceCheck:
    name: str
    problems: list[str]
    summary: str


def train_sources(config: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The train sources and their orchestrator table, in an `rl` or an `orchestrator` TOML."""
    orchestrator = config.get("orchestrator", config)
    return orchestrator.get("train", {}).get("source", []), orchestrator


def misspelt_import_path(import_path: str) -> str | None:
    """The import path of this package's sampler that ``import_path`` most likely misspells: one within this
    package that names no sampler, or a close spelling of one (difflib); None for a path that is right or is
    someone else's sampler."""
    dotted = import_path.replace(":", ".")
    if dotted in IMPORT_PATHS:
        return None
    closest = difflib.get_close_matches(dotted, sorted(IMPORT_PATHS), n=1, cutoff=0.6)
    if closest:
        return closest[0]
    return IMPORT_PATH if dotted.split(".")[0] == "openenv_prime" else None


def check_source(source: dict[str, Any], orchestrator: dict[str, Any]) -> SourceCheck | None:
    """None when the source does not use the openenv_prime sampler (nor, by a misspelt import path, means to)."""
    sampler = source.get("curriculum", {}).get("sampler", {})
    import_path = sampler.get("import_path", "")
    if sampler.get("type") != "custom" or not isinstance(import_path, str):
        return None
    name = source.get("name", "<unnamed>")
    meant = misspelt_import_path(import_path)
    if meant is not None:
        return SourceCheck(name, [
            f"{SAMPLER_PATH}.import_path = {import_path!r} names no sampler in openenv_prime; did you mean {meant!r}? "
            "(prime-rl's `rl --dry-run` does not import it: the orchestrator would fail at start)"], "")
    if import_path.replace(":", ".") not in IMPORT_PATHS:
        return None
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
