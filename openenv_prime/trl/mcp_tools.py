"""An MCP environment's tools (echo_env's ``echo_message``, calendar_env's 37) as the methods TRL declares to the model.

Each listed tool becomes one method: its input schema's properties are the typed arguments, its description the
docstring's summary and each property's description its ``Args:`` line; a call becomes the JSON tool call the episode
engine plays for an MCP environment (``{"tool": name, "arguments": {...}}``, checked against the tool's input schema
there, as in text mode). TRL renders every declaration into every prompt, so what the declarations say (names,
descriptions, arguments; not the JSON around them, which every tool has alike) is kept within the observation budget
as :func:`~openenv_prime.client.prompts.mcp.tools_listing` keeps a tool list in text mode: every tool in full;
else each description's first sentence; else the required arguments only (an optional one is still taken when the
model passes it); then shorter sentences, then none. A tool's required arguments are always declared: a call cannot
do without them. What was left out is a note for the operator, never text the model reads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

from openenv_prime.client.prompts import schema as js
from openenv_prime.client.prompts.mcp import Tool, first_sentence
from openenv_prime.trl.declarations import Argument, declare, field_text, hint, python_name

RESERVED = frozenset({"reset", "get_reward", "episode", "failure"})
"""Names a tool method cannot take: TRL's ``reset`` and ``get_reward``, and the environment object's attributes."""


@dataclass(frozen=True)
class _Level:
    sentence: int | None  # the description's first sentence cut to this many characters (None: whole; 0: none)
    optional: bool  # whether optional arguments are declared
    left_out: str  # what this level leaves out, for the operator's note


_DECLARING = (_Level(None, True, ""),
           _Level(100, True, "full descriptions"),
           _Level(100, False, "optional arguments and full descriptions"),
           _Level(40, False, "optional arguments and most of the descriptions"),
           _Level(0, False, "optional arguments and descriptions"))


def tool_methods(tools: list[Tool], budget: int | None) -> tuple[dict[str, Callable], str | None]:
    """``{method name: function}`` for ``tools``, declared as fully as ``budget`` characters of declarations allow
    (None: in full), and the operator's note on what was left out (None: nothing)."""
    names: dict[str, str] = {}
    for tool in tools:
        names[tool.name] = python_name(tool.name, set(names.values()), prefix="call", reserved=RESERVED)
    for level in _DECLARING:
        declared = {names[tool.name]: _method(names[tool.name], tool, level) for tool in tools}
        size = sum(said for _, said in declared.values())
        if budget is None or size <= budget or level is _DECLARING[-1]:
            break
    note = None
    if level.left_out:
        note = (f"the {len(tools)} MCP tools were declared to TRL without their {level.left_out} to fit the "
                f"observation budget ({budget:,} characters; {size:,} declared); a larger observation_budget declares them")
    return {name: function for name, (function, _) in declared.items()}, note


def call_reply(tool: str, arguments: dict[str, Any]) -> str:
    """The reply a call of ``tool`` stands for, as the engine parses an MCP environment's tool calls."""
    return json.dumps({"tool": tool, "arguments": arguments})


def _method(name: str, tool: Tool, level: _Level) -> tuple[Callable, int]:
    """The tool's method at ``level``, and how many characters its declaration says (name, summary, arguments)."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = set(schema.get("required") or [])
    arguments, originals = [], {}
    for field, spec in properties.items():
        if field not in required and not level.optional:
            continue
        declared = python_name(field, set(originals))
        originals[declared] = field
        arguments.append(Argument(declared, hint(spec, schema), field in required, _argument_text(field, spec, schema, level)))

    def reply_text(given: dict[str, Any]) -> str:
        return call_reply(tool.name, {originals.get(key, key): value for key, value in given.items() if value is not None})

    def call(self, **given: Any) -> str:
        return self._act(reply_text(given))

    call.reply_text = reply_text
    summary = _summary(tool, level)
    said = len(name) + len(summary) + sum(len(argument.name) + len(argument.text) for argument in arguments)
    return declare(call, name, summary, arguments), said


def _summary(tool: Tool, level: _Level) -> str:
    described = " ".join(tool.description.split())
    if level.sentence == 0 or not described:
        return f"Call the environment's tool {tool.name!r}."
    return described if level.sentence is None else first_sentence(described, level.sentence)


def _argument_text(field: str, spec: dict, schema: dict, level: _Level) -> str:
    if level.sentence == 0:
        return f"({js.type_name(spec, schema)})"
    sentence = level.sentence
    return field_text(field, spec, schema, None if sentence is None else lambda text: first_sentence(text, sentence))
