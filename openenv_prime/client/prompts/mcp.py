"""MCP environments (openenv's ``MCPEnvironment``: echo_env and OpenEnv's recommended style): tools instead of an action.

Such a server takes ``CallToolAction`` (``{"type": "call_tool", "tool_name", "arguments"}``) and
``ListToolsAction`` (``{"type": "list_tools"}``) as step actions, in openenv 0.4.1 and 0.10.0 alike. An episode
lists the tools right after reset (one extra step the model never takes), shows them with their input schemas,
turns a JSON tool-call reply into a ``CallToolAction`` (checked against the tool's input schema first), and shows
the tool's result, which the server returns in the observation's ``result`` (or ``error``), as the next text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator

from openenv_prime.client.prompts.actions import decode, invalid
from openenv_prime.client.prompts.schema import validation_errors

LIST_TOOLS_ACTION = {"type": "list_tools"}
_TOOL_KEYS = ("tool", "tool_name", "name")
_ARGUMENT_KEYS = ("arguments", "args", "parameters", "input")


def is_mcp_action(action_schema: dict | None) -> bool:
    """Whether the server declares openenv's ``CallToolAction``: a ``tool_name`` beside the ``type`` discriminator
    fixed to ``"call_tool"``. A plain action that merely has ``tool_name`` and ``arguments`` fields (calendar_env's,
    with its own ``action_type``) is a plain action: sending it ``{"type": "list_tools"}`` would fail validation."""
    properties = (action_schema or {}).get("properties")
    if not isinstance(properties, dict) or "tool_name" not in properties:
        return False
    kind = properties.get("type")
    if not isinstance(kind, dict):
        return False
    return kind.get("const") == "call_tool" or kind.get("enum") == ["call_tool"]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str = ""
    input_schema: dict = field(default_factory=dict)

    def check(self, arguments: dict) -> list[dict]:
        """Where ``arguments`` break the tool's input schema (empty when they fit)."""
        if not self.input_schema:
            return []
        return validation_errors(arguments, Draft202012Validator(self.input_schema))


def tools_from(observation: dict) -> list[Tool]:
    """The tools of a ``ListToolsObservation`` (``input_schema``, or MCP's ``inputSchema``)."""
    tools = observation.get("tools")
    if not isinstance(tools, list):
        raise ValueError(f"the tool listing has no 'tools' list: {str(observation)[:200]}")
    return tool_list(tools)


def tool_list(items: list) -> list[Tool]:
    """The named tools in a list of tool dicts (``input_schema``, MCP's ``inputSchema``, or OpenAI's ``parameters``)."""
    return [
        Tool(str(t["name"]), str(t.get("description") or ""),
             t.get("input_schema") or t.get("inputSchema") or t.get("parameters") or {})
        for t in items
        if isinstance(t, dict) and "name" in t
    ]


def is_tool_list(value: Any) -> bool:
    """A list of tool dicts, each named and described or with an input schema (calendar_env's ``tools_list``)."""
    return isinstance(value, list) and bool(value) and all(
        isinstance(t, dict) and isinstance(t.get("name"), str)
        and any(key in t for key in ("description", "input_schema", "inputSchema", "parameters")) for t in value)


def tools_text(tools: list[Tool], budget: int | None = None) -> str:
    """The tool list as the model sees it (:func:`tools_listing`'s text)."""
    return tools_listing(tools, budget)[0]


def tools_listing(tools: list[Tool], budget: int | None = None) -> tuple[str, str | None]:
    """The tool list as the model sees it, as much as fits in ``budget`` characters, and a note for the operator on
    what was left out (None: nothing). In this order of priority: every tool's input schema in full; else each tool
    with its argument names and the first sentence of its description; else with its required arguments and that
    sentence, then a shorter one, then none (a tool's required arguments are what a call cannot do without); else the
    names alone, as many as fit. The model's text says only how to read the list (``?`` marks an optional argument,
    ``...`` stands for optional ones), never the budget, which is the operator's to change."""
    if not tools:
        return "The environment lists no tools.", None
    for level, left_out, legend in _LEVELS:
        lines = ["Tools you can call:", *(line for tool in tools for line in level(tool))]
        text = "\n".join(lines + ([legend] if legend else []))
        if budget is None or len(text) <= budget:
            return text, _note(left_out, len(tools), budget)
    names, shown = [tool.name for tool in tools], []
    for name in names:
        if len(_names_line(shown + [name], len(names))) > budget:
            break
        shown.append(name)
    more = len(names) - len(shown)
    return _names_line(shown, len(names)), _note(
        "arguments, descriptions and input schemas" + (f", and {more} tools' names" if more else ""), len(tools), budget)


def _note(left_out: str, count: int, budget: int | None) -> str | None:
    """The operator's note on a shortened tool list (None when nothing was left out)."""
    if not left_out:
        return None
    return (f"the {count}-tool list was shortened to fit the observation budget ({budget:,} characters): {left_out} "
            "left out; a larger observation budget shows them")


def _names_line(shown: list[str], total: int) -> str:
    more = total - len(shown)
    return f"Tools you can call: {', '.join(shown)}" + (f" [and {more} more]" if more else "")


def _full(tool: Tool) -> list[str]:
    return [f"- {tool.name}: {' '.join(tool.description.split()) or _undescribed(tool)}",
            f"  input schema: {json.dumps(tool.input_schema, sort_keys=True)}"]


def _arguments(tool: Tool) -> list[tuple[str, bool]]:
    """The tool's argument names in schema order, each with whether it is required."""
    properties = tool.input_schema.get("properties") if isinstance(tool.input_schema.get("properties"), dict) else {}
    required = set(tool.input_schema.get("required") or [])
    return [(name, name in required) for name in properties]


def _with_arguments(tool: Tool) -> list[str]:
    arguments = ", ".join(name if needed else f"{name}?" for name, needed in _arguments(tool))
    return [f"- {tool.name}({arguments}): {first_sentence(tool.description)}"]


def _with_required(tool: Tool, sentence: int | None = 100) -> list[str]:
    arguments = _arguments(tool)
    required = [name for name, needed in arguments if needed]
    more = ", ..." if len(required) < len(arguments) else ""
    said = f": {first_sentence(tool.description, sentence)}" if sentence else ""
    return [f"- {tool.name}({', '.join(required)}{more}){said}"]


def _with_required_brief(tool: Tool) -> list[str]:
    return _with_required(tool, 40)


def _required_only(tool: Tool) -> list[str]:
    return _with_required(tool, None)


_OPTIONAL = "An argument marked ? is optional."
_ELIDED = "... stands for a tool's optional arguments."
_LEVELS = ((_full, "", ""),
           (_with_arguments, "full descriptions and input schemas", _OPTIONAL),
           (_with_required, "optional arguments (...), full descriptions and input schemas", _ELIDED),
           (_with_required_brief, "optional arguments (...), most of the descriptions and the input schemas", _ELIDED),
           (_required_only, "optional arguments (...), descriptions and input schemas", _ELIDED))


def first_sentence(text: str, limit: int = 100) -> str:
    """The description's first sentence, at most ``limit`` characters."""
    squashed = " ".join(text.split())
    first = re.split(r"(?<=[.!?])\s", squashed, maxsplit=1)[0]
    return first if len(first) <= limit else first[:limit - 3].rstrip() + "..."


def _undescribed(tool: Tool) -> str:
    """What a tool without a description takes, from its input schema (an ORS tool's description is its docstring,
    which the ORS quick start's ``submit`` lacks)."""
    properties = tool.input_schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        return "(no description; it takes no arguments)"
    required = set(tool.input_schema.get("required") or [])
    arguments = []
    for name, spec in properties.items():
        kind = spec.get("type") if isinstance(spec, dict) and isinstance(spec.get("type"), str) else None
        need = "required" if name in required else "optional"
        arguments.append(f"`{name}` ({kind}, {need})" if kind else f"`{name}` ({need})")
    return f"(no description) takes {', '.join(arguments)}"


def instructions() -> str:
    return (
        'Act by calling one tool per reply: reply with only a JSON object {"tool": "<tool name>", '
        '"arguments": {...}} whose arguments fit the tool\'s input schema.'
    )


def parse_call(reply: str, tools: list[Tool] | None) -> dict:
    """The ``CallToolAction`` for a JSON tool-call reply, checked against the listed tools."""
    call = decode(reply, 'a JSON tool call {"tool": "<name>", "arguments": {...}}')
    if not isinstance(call, dict):
        raise invalid('the reply is JSON but not a tool call object {"tool": "<name>", "arguments": {...}}')
    if isinstance(call.get("function"), dict):  # an OpenAI-style tool call
        call = call["function"]
    name = next((call[k] for k in _TOOL_KEYS if isinstance(call.get(k), str)), None)
    if name is None:
        raise invalid('the tool call names no tool; write {"tool": "<name>", "arguments": {...}}')
    arguments = next((call[k] for k in _ARGUMENT_KEYS if k in call), {})
    if isinstance(arguments, str):  # OpenAI sends arguments as a JSON string
        arguments = decode(arguments, f"a JSON object of arguments for {name!r}")
    if not isinstance(arguments, dict):
        raise invalid(f"the arguments of {name!r} must be a JSON object, got {json.dumps(arguments)[:100]}")
    if tools is not None:
        known = {tool.name: tool for tool in tools}
        if name not in known:
            raise invalid(f"there is no tool {name!r}; the tools are {sorted(known)}")
        errors = known[name].check(arguments)
        if errors:
            raise invalid(f"the arguments do not fit the input schema of {name!r}", errors)
    return {"type": "call_tool", "tool_name": name, "arguments": arguments}


def is_tool_listing(observation: dict) -> bool:
    """Whether ``observation`` is a ``ListToolsObservation``: a list of named tools."""
    tools = observation.get("tools")
    return isinstance(tools, list) and all(isinstance(t, dict) and "name" in t for t in tools)


def tool_observation_text(observation: dict) -> str | None:
    """The text for a tool listing or a tool result; None for any other observation."""
    if is_tool_listing(observation):
        return tools_text(tools_from(observation))
    if "tool_name" in observation and ("result" in observation or "error" in observation):
        return result_text(observation)
    return None


def result_text(observation: dict) -> str:
    """What a ``CallToolObservation`` says: the tool's data, else its text content, or its error."""
    name = observation.get("tool_name")
    error = observation.get("error")
    if isinstance(error, dict) and error:
        return f"Tool {name!r} failed ({error.get('error_type', 'error')}): {error.get('message', '')}"
    result = observation.get("result")
    if not isinstance(result, dict):
        return _text(result)
    content = "\n".join(
        part.get("text", "") for part in result.get("content") or [] if isinstance(part, dict) and part.get("type") == "text"
    )
    if result.get("is_error") or result.get("isError"):
        return f"Tool {name!r} failed: {content or _text(result.get('data'))}"
    if result.get("data") is not None:
        return _text(result["data"])
    if content:
        return content
    structured = result.get("structured_content") or result.get("structuredContent")
    return _text(structured if structured is not None else result)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
