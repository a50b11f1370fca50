"""What the environment's numbers mean, where its observation schema says it.

A flat list of numbers means nothing to a model without its layout: finrl_env's ``state`` is 7 unlabelled floats,
explained only in the observation class's docstring ("state: Flattened state vector ... Structure: [balance,
prices..., holdings..., indicators...]"). For each observation field that is an array of numbers, the field's own
description or the docstring's lines about it (and the array's size, where the schema bounds it) are said once in the
system prompt. Nothing is said where the schema says nothing, and never of a hidden field (it may hold the answer).
"""

from __future__ import annotations

from typing import Any

from openenv_prime.client.prompts import schema as js
from openenv_prime.client.prompts.described import blocks_about
from openenv_prime.client.prompts.hidden import HiddenNames


def numbers_note(observation_schema: dict[str, Any] | None, hidden: HiddenNames) -> str:
    """The system prompt's lines on what the observation's number arrays hold ("" when the schema says nothing)."""
    if not isinstance(observation_schema, dict) or not isinstance(observation_schema.get("properties"), dict):
        return ""
    about_class = observation_schema.get("description") if isinstance(observation_schema.get("description"), str) else ""
    lines = []
    for name, spec in observation_schema["properties"].items():
        if name in hidden or not _numbers(spec, observation_schema):
            continue
        own = js.resolve(spec, observation_schema).get("description")
        said = [own] if isinstance(own, str) and own.strip() else blocks_about(name, about_class)
        text = " ".join(" ".join(said).split())
        if not text:
            continue
        size = js.bounds(spec, observation_schema)
        lines.append(f"- `{name}`{f' ({size})' if size else ''}: {text}")
    return "The environment describes the numbers it shows:\n" + "\n".join(lines) if lines else ""


def _numbers(spec: Any, root: dict) -> bool:
    """An array of numbers (``list[float]``, ``list[int]``), possibly optional."""
    member = js.options(spec, root)[0]
    return member.get("type") == "array" and js.kind(member.get("items", {}), root) in ("number", "integer")
