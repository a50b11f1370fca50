"""Text in, text out: an observation becomes the model's prompt text, and the model's reply becomes an action.

A model sees text; an OpenEnv environment speaks JSON objects. For an action with one string field (chain_sum's
``answer``) the reply goes in verbatim, never JSON-decoded, so a reply like ``"42"`` stays the string ``"42"``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from openenv_prime.client.errors import InvalidRequestError

# Observation fields that hold the prompt text, in order of preference, when no field is named.
_TEXT_FIELDS = ("prompt", "question", "text", "message", "content", "observation", "instruction")
_BOOKKEEPING = {"metadata", "reward", "done"}
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def observation_to_text(observation: dict, field: str | None = None) -> str:
    """The text to show the model: ``observation[field]``, else the first prompt-like string field, else the
    observation's non-empty fields as JSON."""
    if not isinstance(observation, dict):
        raise TypeError(f"observation must be a dict, got {type(observation).__name__}")
    if field is not None:
        if field not in observation:
            raise KeyError(f"observation has no field {field!r}; its fields are {sorted(observation)}; pass one of them as field=")
        value = observation[field]
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    for name in _TEXT_FIELDS:
        if isinstance(observation.get(name), str):
            return observation[name]
    strings = [k for k, v in observation.items() if isinstance(v, str) and k not in _BOOKKEEPING]
    if len(strings) == 1:
        return observation[strings[0]]
    shown = {k: v for k, v in observation.items() if k not in _BOOKKEEPING and v is not None}
    return json.dumps(shown, ensure_ascii=False, sort_keys=True)


def reply_to_action(reply: str, action_schema: dict | None = None, field: str | None = None) -> dict:
    """The action for a model reply.

    ``field`` (or an action schema with a single field besides ``metadata``) puts the reply into that field:
    verbatim for a string field, JSON-decoded for other types. An action with several fields expects the
    reply to be a JSON object (optionally in a code fence) holding the required ones. A reply that cannot be
    turned into an action raises :class:`InvalidRequestError` naming what is missing.
    """
    if not isinstance(reply, str):
        raise TypeError(f"reply must be the model's text, got {type(reply).__name__}")
    properties, required = _action_fields(action_schema)
    if field is None:
        if properties is None:
            raise ValueError("reply_to_action needs field= or action_schema= (the 'action' entry of the server's /schema)")
        if len(properties) == 1:
            field = next(iter(properties))
    if field is not None:
        spec = (properties or {}).get(field, {"type": "string"})
        if _is_string(spec):
            return {field: reply}
        return {field: _decode(reply, f"a JSON value for the {field!r} field")}
    decoded = _decode(reply, f"a JSON object with the fields {sorted(properties)}")
    if not isinstance(decoded, dict):
        raise _invalid(f"the reply is JSON but not an object with the fields {sorted(properties)}", [])
    missing = [name for name in required if name not in decoded]
    if missing:
        raise _invalid("the reply lacks required action fields", [{"loc": [m], "msg": "Field required", "type": "missing"} for m in missing])
    return decoded


def _action_fields(schema: dict | None) -> tuple[dict | None, list[str]]:
    if schema is None:
        return None, []
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        raise ValueError(f"action_schema must be a JSON schema object with 'properties' (the 'action' entry of /schema), got {str(schema)[:200]}")
    properties = {k: v for k, v in schema["properties"].items() if k != "metadata"}
    if not properties:
        raise ValueError("action_schema has no fields besides 'metadata'; nothing to put the reply into")
    return properties, [r for r in schema.get("required", []) if r in properties]


def _is_string(spec: Any) -> bool:
    if not isinstance(spec, dict):
        return False
    if spec.get("type") == "string":
        return True
    options = spec.get("anyOf") or spec.get("oneOf") or []
    return any(isinstance(o, dict) and o.get("type") == "string" for o in options)


def _decode(reply: str, expected: str) -> Any:
    fenced = _FENCE.match(reply)
    text = fenced.group(1) if fenced else reply.strip()
    try:
        return json.loads(text)
    except ValueError:
        raise _invalid(f"the reply is not {expected}: {reply[:200]!r}", []) from None


def _invalid(message: str, errors: list) -> InvalidRequestError:
    return InvalidRequestError(message, errors=errors, hint="the model's reply could not be turned into an action")
