"""An observation becomes the text the model sees.

By default every field that is not bookkeeping is shown: the prompt-like text field first (``question``,
``message``, ...), then each other field as ``name: value`` (grid_world shows its message and ``x``/``y``). An
observation whose data sits only in ``metadata`` (MCP environments such as echo_env) shows the metadata instead,
never ``{}``; MCP tool listings and tool results are shown as text (see :mod:`openenv_prime.client.mcp`).
``field`` picks one field, or is a template with ``{field}`` placeholders (``"{message} at ({x}, {y})"``; metadata
keys work too).
"""

from __future__ import annotations

import json
import string
from typing import Any

from openenv_prime.client import mcp

# Fields that describe the episode rather than the world: the wire's reward/done/metadata, and ``task``, the echo
# of the task spec some environments (chain_sum) return, which may hold the answer.
BOOKKEEPING = frozenset({"metadata", "reward", "done", "task"})
# Observation fields that hold the prompt text, in order of preference: shown first, without a name.
TEXT_FIELDS = ("prompt", "question", "text", "message", "content", "observation", "instruction")
_EMPTY = (None, "", {})  # values not worth a line (0, False and [] are information)


def is_template(field: str | None) -> bool:
    return field is not None and "{" in field


def observation_text(observation: dict, field: str | None = None, metadata: dict | None = None) -> str:
    """The text to show the model for ``observation`` (``metadata``: the frame's top-level metadata, if any)."""
    if not isinstance(observation, dict):
        raise TypeError(f"observation must be a dict, got {type(observation).__name__}")
    if is_template(field):
        return _fill(field, observation, metadata)
    if field is not None:
        if field not in observation:
            raise KeyError(f"observation has no field {field!r}; its fields are {sorted(observation)}; name one of them (observation field)")
        return _value_text(observation[field])
    special = mcp.tool_observation_text(observation)
    if special is not None:
        return special
    shown = {k: v for k, v in observation.items() if k not in BOOKKEEPING and v not in _EMPTY}
    if not shown:  # the data sits in metadata (echo_env's reset), or there is none
        inner = observation.get("metadata") if isinstance(observation.get("metadata"), dict) else {}
        shown = {k: v for k, v in {**(metadata or {}), **inner}.items() if v not in _EMPTY}
    if not shown:
        return "(the environment sent no observation text)"
    if len(shown) == 1:  # one text field: the text alone
        ((name, value),) = shown.items()
        return value if isinstance(value, str) else f"{name}: {_value_text(value)}"
    primary = next((name for name in TEXT_FIELDS if isinstance(shown.get(name), str)), None)
    lines = [shown[primary]] if primary is not None else []
    lines += [f"{name}: {_value_text(value)}" for name, value in shown.items() if name != primary]
    return "\n".join(lines)


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _fill(template: str, observation: dict, metadata: dict | None) -> str:
    inner = observation.get("metadata") if isinstance(observation.get("metadata"), dict) else {}
    values = {**(metadata or {}), **inner, **observation}
    try:
        return string.Formatter().vformat(template, (), values)
    except KeyError as error:
        raise KeyError(
            f"the observation template {template!r} names {error.args[0]!r}, which the observation lacks; "
            f"its fields are {sorted(observation)} and its metadata keys {sorted(inner)}"
        ) from None
    except (IndexError, ValueError, AttributeError) as error:
        raise ValueError(f"the observation template {template!r} cannot be filled: {error}") from None
