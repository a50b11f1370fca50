"""A model reply becomes an action, following the environment's action schema.

Three shapes, chosen from the schema (or ``field``):
- one free-text field (chain_sum's ``answer``): the reply goes in verbatim, never JSON-decoded, so ``"42"`` stays
  the string ``"42"``;
- one field of any other type: an Enum or ``Literal`` (grid_world's ``action``) takes the bare value, matched
  case-insensitively, also fenced or quoted; other types take a JSON value (``3``, ``[1, 2]``);
- several fields: a JSON object (optionally in a code fence).
Constant fields (a ``Literal`` discriminator such as MCP's ``type``) are filled in, and every action is validated
against the schema before it is sent: a bad reply raises :class:`InvalidRequestError` saying what is wrong, which
the episode loops feed back to the model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from openenv_prime.client import schema as js
from openenv_prime.client.errors import InvalidRequestError

_FENCE = re.compile(r"^\s*```[\w-]*\s*\n?(.*?)\s*```\s*$", re.DOTALL)
_QUOTES = "\"'`"


def invalid(message: str, errors: list | None = None) -> InvalidRequestError:
    """The error for a reply that is no valid action (``str()`` of it is what the model is told)."""
    return InvalidRequestError(message, errors=errors or [], hint="the model's reply could not be turned into an action")


def unwrap(reply: str) -> str:
    """The reply without surrounding whitespace and a code fence."""
    fenced = _FENCE.match(reply)
    return fenced.group(1).strip() if fenced else reply.strip()


def decode(reply: str, expected: str) -> Any:
    """The JSON value in ``reply`` (fenced or not); an error naming ``expected`` when there is none."""
    try:
        return json.loads(unwrap(reply))
    except ValueError:
        raise invalid(f"the reply is not {expected}: {reply[:200]!r}") from None


@dataclass(frozen=True)
class ActionFormat:
    """How replies become actions for one action schema; build it once per environment with :meth:`from_schema`."""

    schema: dict | None
    field: str | None  # the one field a bare reply fills, or None: the reply is a JSON object
    fields: dict[str, dict]  # the fields a model fills (metadata and constants left out)
    required: tuple[str, ...]
    constants: dict[str, Any]  # fields with a single allowed value, filled in

    @classmethod
    def from_schema(cls, action_schema: dict | None, field: str | None = None) -> "ActionFormat":
        if action_schema is None:
            if field is None:
                raise ValueError(
                    "no action schema to read, so the field a reply fills is unknown: pass field= or action_schema= "
                    "(the 'action' entry of the server's /schema), or name the action field (eval: --action-field; "
                    "vf-eval: --env.taskset.action-field; the trainer: action_field)"
                )
            return cls(None, field, {field: {"type": "string"}}, (field,), {})
        if not isinstance(action_schema, dict) or not isinstance(action_schema.get("properties"), dict):
            raise ValueError(
                f"action_schema must be a JSON schema object with 'properties' (the 'action' entry of /schema), got {str(action_schema)[:200]}"
            )
        properties = {k: v for k, v in action_schema["properties"].items() if k not in js.BOOKKEEPING_ACTION_FIELDS}
        constants = {}
        for name, spec in properties.items():
            allowed = js.choices(spec, action_schema)
            if allowed is not None and len(allowed) == 1 and name != field:
                constants[name] = allowed[0]
        fields = {k: v for k, v in properties.items() if k not in constants}
        if not fields:
            raise ValueError("action_schema has no fields besides 'metadata' and constants; nothing to put the reply into")
        if field is None and len(fields) == 1:
            field = next(iter(fields))
        if field is not None and field not in fields:
            fields = {**fields, field: {"type": "string"}}  # a field the schema does not list: the server decides
        required = tuple(r for r in action_schema.get("required", []) if r in fields)
        return cls(action_schema, field, fields, required, constants)

    # ---- replies -> actions -------------------------------------------------------------------------
    def parse(self, reply: str) -> dict:
        """The action for ``reply``; :class:`InvalidRequestError` (a ``ValueError``) when it is none."""
        if not isinstance(reply, str):
            raise TypeError(f"reply must be the model's text, got {type(reply).__name__}")
        if self.field is not None:
            action = {self.field: self._value(reply)}
        else:
            action = self._object(reply)
        action = {**self.constants, **action}
        self._validate(action)
        return action

    def _value(self, reply: str) -> Any:
        kind, allowed = self._field_kind
        if kind == "text":
            return reply
        if kind == "choice":
            return self._choice(reply, allowed, self.field)
        spec, root = self.fields[self.field], self.schema or {}
        return decode(reply, f"a JSON value for the {self.field!r} field ({js.type_name(spec, root)})")

    @cached_property
    def _field_kind(self) -> tuple[str, list[Any] | None]:
        """How a bare reply fills ``field``: verbatim ("text"), matched to a value ("choice"), or decoded ("json");
        read from the schema once (it is the same for every reply)."""
        spec, root = self.fields[self.field], self.schema or {}
        allowed = js.choices(spec, root)
        if allowed is not None:
            return "choice", allowed
        return ("text" if js.is_text(spec, root) else "json"), None

    def _choice(self, reply: str, allowed: list[Any], name: str) -> Any:
        text = unwrap(reply)
        if len(text) >= 2 and text[0] == text[-1] and text[0] in _QUOTES:
            text = text[1:-1].strip()
        text = text.rstrip(".").strip()
        if text.startswith("{"):  # a JSON object naming the field is fine too
            try:
                decoded = json.loads(text)
            except ValueError:
                decoded = None
            if isinstance(decoded, dict) and name in decoded:
                text = str(decoded[name])
        for value in allowed:
            if str(value).casefold() == text.casefold():
                return value
        shown = ", ".join(str(value) for value in allowed)
        raise invalid(f"the reply {reply[:100]!r} is not one of the allowed values for {name!r}: {shown}")

    def _object(self, reply: str) -> dict:
        names = sorted(self.fields)
        decoded = decode(reply, f"a JSON object with the fields {names}")
        if not isinstance(decoded, dict):
            raise invalid(f"the reply is JSON but not an object with the fields {names}")
        missing = [name for name in self.required if name not in decoded]
        if missing:
            raise invalid(
                "the reply lacks required action fields",
                [{"loc": [m], "msg": "Field required", "type": "missing"} for m in missing],
            )
        root = self.schema or {}
        for name, value in decoded.items():  # Enum values case-insensitively, as for a bare reply
            allowed = js.choices(self.fields.get(name, {}), root) if name in self.fields else None
            if allowed is not None and isinstance(value, str):
                matches = [a for a in allowed if str(a).casefold() == value.casefold()]
                if matches:
                    decoded[name] = matches[0]
        return decoded

    def _validate(self, action: dict) -> None:
        if self.schema is None or self._trivially_valid:
            return
        errors = js.validation_errors(action, self._checker)
        if errors:
            raise invalid("the reply does not fit the action schema", errors)

    @cached_property
    def _trivially_valid(self) -> bool:
        """A bare reply into an unconstrained free-text field, the only required one, always fits: skip the check
        (it would cost more than the rest of turning the reply into an action)."""
        if self.field is None or set(self.required) - {self.field}:
            return False
        spec = js.resolve(self.fields[self.field], self.schema or {})
        return js.is_text(spec, self.schema or {}) and set(spec) <= {"type", "title", "description", "default"}

    @cached_property
    def _checker(self):
        return js.validator(self.schema)

    # ---- instructions -------------------------------------------------------------------------------
    def instructions(self) -> str:
        """What the model must reply, generated from the schema ("" for a single free-text field: any text)."""
        root = self.schema or {}
        if self.field is not None:
            spec = self.fields[self.field]
            allowed = js.choices(spec, root)
            if allowed is not None:
                return "Reply with exactly one of: " + ", ".join(str(v) for v in allowed) + " (nothing else)."
            if js.is_text(spec, root):
                return ""
            return f"Reply with only a JSON value ({js.type_name(spec, root)}) for the action's `{self.field}` field."
        lines = ["Reply with only a JSON object for the action, with these fields:"]
        for name, spec in self.fields.items():
            need = "required" if name in self.required else "optional"
            about = js.resolve(spec, root).get("description") or ""
            lines.append(f"- \"{name}\" ({js.type_name(spec, root)}, {need})" + (f": {about}" if about else ""))
        example = {name: js.placeholder(spec, root) for name, spec in self.fields.items() if name in self.required}
        lines.append(f"For example: {json.dumps(example or {n: js.placeholder(s, root) for n, s in self.fields.items()})}")
        return "\n".join(lines)
