"""A model reply becomes an action, following the environment's action schema; the schema also says what to reply.

Which fields the model fills: the required ones, and the optional ones whose default is ``null`` (wildfire's
``x``/``y``: "Optional coordinates"). Optional fields with any other default (openspiel's ``game_name="catch"``,
``game_params={}``), and optional ones whose description calls them configuration ("server configuration, leave
unset"; :func:`~openenv_prime.client.prompts.described.configures`), are the environment's settings, not moves: they are left
out of the reply format and the server fills in their defaults, unless ``action_fields`` names them. Some fields
are never settings, whatever their default (unless a description calls them configuration):

- the *content field* of an action with no required field: the free-text field that carries the move, which an
  empty default (``""``) would otherwise hide. It is the action's one text field besides flags (booleans), or the text
  field the first sentence of the action's description names (repl_env's ``code: str = ""`` in "Action containing
  Python code to execute"). It becomes the field a bare reply fills, as ``action_field`` would make it;
- the ``arguments`` of a tool-call-shaped action (a ``tool_name`` beside an object-typed ``arguments``/``args``/
  ``parameters``, calendar_env's ``MCPAction``): the model must fill them to call any tool;
- a field that selects what the action does (:func:`selects`): ``action_type`` (tbench2_env's ``str = "exec"``, whose
  reward-giving value is ``"evaluate"``), or a ``type``/``kind``/``op``/``operation``/``verb`` field with several legal
  values in the schema or its descriptions;
- a command or code field (``command``, ``cmd``, ``code``, ``script``, ``query``, ...: :func:`commands`) holding text.

When no field is required, the example reply shows those that select the action and carry its command, when there
are any. An action card (:mod:`~openenv_prime.client.prompts.card`) replaces all of this guessing: its fields are
offered, its legal values checked, its fixed values sent, its example shown. Either way, the action's description
keeps no line or sentence that names a field the model cannot set (repl_env's "Set is_final=True with
final_answer", where the reply fills only ``code``).

Constant fields (a ``Literal`` discriminator such as MCP's ``type``) are filled in. The example reply shows the
required fields only (all the offered ones when none is required), so it never invites the model to fill an optional
one.

Three reply shapes, chosen from the fields the model fills (or ``field``):
- one free-text field (chain_sum's ``answer``): the reply goes in verbatim, never JSON-decoded, so ``"42"`` stays
  the string ``"42"``;
- one field of any other type: an Enum or ``Literal`` (grid_world's ``action``) or a value the description names
  (:mod:`~openenv_prime.client.prompts.described`: wildfire's ``water``, snake's ``turn left``) takes the bare value, matched
  case-insensitively, also fenced or quoted; other types take a JSON value (``3``, ``[1, 2]``);
- several fields: a JSON object (optionally in a code fence); when one field is required, a bare value fills it
  (``wait`` for wildfire).

What the model is told comes from the whole schema: the class description (the action class's docstring), each
field's description, type, allowed values (schema or description), bounds and default. Every action is validated
against the schema before it is sent: a bad reply raises :class:`InvalidRequestError` saying what is wrong, which the
episode loops feed back to the model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field as dataclass_field
from functools import cached_property
from typing import Any, Iterable

from openenv_prime.client.prompts import schema as js
from openenv_prime.client.prompts.card import ActionCard, CardField
from openenv_prime.client.prompts.described import (Described, configures, described, says_only_reply, without_fields,
                                                     without_mentions)
from openenv_prime.client.wire.errors import InvalidRequestError

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


def _bare(reply: str) -> str:
    """The reply without fence, quotes and a final full stop: the value a model meant."""
    text = unwrap(reply)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in _QUOTES:
        text = text[1:-1].strip()
    return text.rstrip(".").strip()


@dataclass(frozen=True)
class ActionFormat:
    """How replies become actions for one action schema; build it once per environment with :meth:`from_schema`."""

    schema: dict | None
    field: str | None  # the one field a bare reply fills, or None: the reply is a JSON object
    fields: dict[str, dict]  # the fields a model fills (metadata, constants and settings left out)
    required: tuple[str, ...]
    constants: dict[str, Any]  # fields with a single allowed value, filled in
    settings: tuple[str, ...] = ()  # optional fields left to the server's default
    about: dict[str, Described] = dataclass_field(default_factory=dict)  # what the descriptions say of each field
    card: ActionCard | None = None  # the user's action card, when it replaces the inference
    leads: tuple[str, ...] = ()  # the fields that select the action or carry its command (the example's, by default)

    @classmethod
    def from_schema(cls, action_schema: dict | None, field: str | None = None,
                    extra_fields: Iterable[str] = (), card: ActionCard | None = None) -> "ActionFormat":
        extra = tuple(extra_fields)
        if card is not None:
            if field is not None or extra:
                raise ValueError("an action card says which fields the model fills: set them in the card, not also "
                                 f"with action_field ({field!r}) or action_fields ({list(extra)})")
            return cls._from_card(action_schema, card)
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
        unknown = [name for name in extra if name not in properties]
        if unknown:
            raise ValueError(
                f"action_fields names {unknown}, which the action schema lacks; its fields are {sorted(properties)}"
            )
        constants = {}
        for name, spec in properties.items():
            allowed = js.choices(spec, action_schema)
            if allowed is not None and len(allowed) == 1 and name != field:
                constants[name] = allowed[0]
        required_names = set(action_schema.get("required", []))
        class_about = action_schema.get("description") if isinstance(action_schema.get("description"), str) else None
        if field is None and not required_names:
            field = content_field(action_schema, properties, constants)
        must_fill = tool_arguments(action_schema, properties)
        fields, settings, leads = {}, [], []
        for name, spec in properties.items():
            if name in constants:
                continue
            resolved = js.resolve(spec, action_schema)
            setting = configures(name, resolved.get("description"), class_about)
            lead = not setting and (selects(name, spec, action_schema) or commands(name, spec, action_schema))
            offered = name in required_names or name == field or name in extra or name == must_fill or lead or (
                "default" in resolved and resolved["default"] is None and not setting
            )
            if offered:
                fields[name] = spec
                leads += [name] if lead else []
            else:
                settings.append(name)
        if not fields:
            raise ValueError(
                "action_schema has no fields for the model besides 'metadata', constants and settings with defaults "
                f"({settings}); name the ones it fills with action_fields"
            )
        if field is None and len(fields) == 1:
            field = next(iter(fields))
        if field is not None and field not in fields:
            fields = {**fields, field: {"type": "string"}}  # a field the schema does not list: the server decides
        required = tuple(r for r in action_schema.get("required", []) if r in fields)
        about = {}
        for name, spec in fields.items():
            found = described(name, js.resolve(spec, action_schema).get("description"), class_about,
                              js.kind(spec, action_schema) or "")
            if found and js.choices(spec, action_schema) is None:
                about[name] = found
        return cls(action_schema, field, fields, required, constants, tuple(settings), about, leads=tuple(leads))

    @classmethod
    def _from_card(cls, action_schema: dict | None, card: ActionCard) -> "ActionFormat":
        """The format an action card states: its fields offered (typed by the schema), its fixed values sent, every
        other field left to the server; checked against the schema, and its example read as a reply."""
        card.check(action_schema)
        root = action_schema or {}
        properties = {k: v for k, v in (root.get("properties") or {}).items() if k not in js.BOOKKEEPING_ACTION_FIELDS}
        fields = {name: properties.get(name, {"type": "string"}) for name in card.fields}
        constants = {name: allowed[0] for name, spec in properties.items() if name not in fields
                     and (allowed := js.choices(spec, root)) is not None and len(allowed) == 1}
        constants.update(card.fixed)
        settings = tuple(name for name in properties if name not in fields and name not in constants)
        field = card.reply_field if card.reply_field is not None else (next(iter(fields)) if len(fields) == 1 else None)
        required = tuple(name for name in root.get("required", []) if name in fields)
        class_about = card.about if card.about is not None else root.get("description")
        about = {}
        for name, spec in fields.items():
            if card.fields[name].values is not None or js.choices(spec, root) is not None:
                continue
            own = card.fields[name].description or js.resolve(spec, root).get("description")
            found = described(name, own, class_about if isinstance(class_about, str) else None, js.kind(spec, root) or "")
            if found:
                about[name] = found
        made = cls(action_schema, field, fields, required, constants, settings, about, card)
        made._check_card()
        return made

    def _check_card(self) -> None:
        """A card's fixed and legal values must be ones the schema takes, and its example a valid reply."""
        for name, value in self.card.fixed.items():
            self._check_value(name, value, "fixed value")
        for name, spec in self.card.fields.items():
            for value in spec.values or ():
                self._check_value(name, value, "legal value")
        if self.card.example is not None:
            try:
                self.parse(json.dumps(self.card.example))
            except InvalidRequestError as exc:
                raise ValueError(f"the action card's example {json.dumps(self.card.example)} is no valid reply: {exc}") \
                    from None

    def _check_value(self, name: str, value: Any, what: str) -> None:
        if self.schema is None:
            return
        spec = (self.schema.get("properties") or {}).get(name, {})
        checker = js.validator({"$defs": self.schema.get("$defs", {}), **spec})
        errors = js.validation_errors(value, checker)
        if errors:
            raise ValueError(f"the action card's {what} {json.dumps(value)} for {name!r} does not fit the action "
                             f"schema: {errors[0]['msg']}")

    # ---- replies -> actions -------------------------------------------------------------------------
    def parse(self, reply: str) -> dict:
        """The action for ``reply``; :class:`InvalidRequestError` (a ``ValueError``) when it is none."""
        if not isinstance(reply, str):
            raise TypeError(f"reply must be the model's text, got {type(reply).__name__}")
        if self.field is not None:
            named = self._named_object(reply)
            action = named if named is not None else {self.field: self._value(reply, self.field)}
        else:
            action = self._object(reply)
        action = {**self.constants, **action}
        self._validate(action)
        return action

    def _value(self, reply: str, name: str) -> Any:
        """The value of field ``name`` that a bare reply gives."""
        kind, allowed = self._kinds[name]
        if kind == "text":
            return reply
        if kind == "choice":
            return self._choice(reply, allowed, name)
        about = self.about.get(name)
        if kind == "described-text":
            said = about.read(_bare(reply), "string")
            return said if said is not None else reply
        spec, root = self.fields[name], self.schema or {}
        try:
            return decode(reply, f"a JSON value for the {name!r} field ({js.type_name(spec, root)})")
        except InvalidRequestError:
            said = about.read(_bare(reply), js.kind(spec, root) or "") if about is not None else None
            if said is None:
                raise
            return said

    @cached_property
    def _kinds(self) -> dict[str, tuple[str, list[Any] | None]]:
        """How a bare reply fills each field: verbatim ("text"), matched to a value ("choice"), matched to a value
        the description names or else verbatim ("described-text"), or decoded ("json"); read once per schema."""
        kinds = {}
        root = self.schema or {}
        for name, spec in self.fields.items():
            allowed = self._choices(name)
            if allowed is not None:
                kinds[name] = ("choice", allowed)
            elif js.is_text(spec, root):
                kinds[name] = ("described-text" if name in self.about else "text", None)
            else:
                kinds[name] = ("json", None)
        return kinds

    def _named_object(self, reply: str) -> dict | None:
        """A JSON object that names the one field (``{"action": "up"}``) is fine too, unless the field is free text."""
        text = unwrap(reply)
        if self._kinds[self.field][0] == "text" or not text.startswith("{"):
            return None
        try:
            decoded = json.loads(text)
        except ValueError:
            return None
        if not isinstance(decoded, dict) or self.field not in decoded:
            return None
        kind, allowed = self._kinds[self.field]
        if kind == "choice":  # the same check, and the same message, as for a bare value
            decoded[self.field] = self._choice(str(decoded[self.field]), allowed, self.field)
        return self._canonical(decoded)

    def _choice(self, reply: str, allowed: list[Any], name: str) -> Any:
        text = _bare(reply)
        for value in allowed:
            if str(value).casefold() == text.casefold():
                return value
        shown = ", ".join(str(value) for value in allowed)
        raise invalid(f"the reply {reply[:100]!r} is not one of the allowed values for {name!r}: {shown}")

    def _object(self, reply: str) -> dict:
        names = sorted(self.fields)
        try:
            decoded = decode(reply, f"a JSON object with the fields {names}")
        except InvalidRequestError:
            decoded = None
        if not isinstance(decoded, dict):
            if len(self.required) == 1:  # a bare value fills the one required field ("wait")
                try:
                    return {self.required[0]: self._value(reply, self.required[0])}
                except InvalidRequestError:
                    pass
            if decoded is None:
                raise invalid(f"the reply is not a JSON object with the fields {names}: {reply[:200]!r}")
            raise invalid(f"the reply is JSON but not an object with the fields {names}")
        missing = [name for name in self.required if name not in decoded]
        if missing:
            raise invalid(
                "the reply lacks required action fields",
                [{"loc": [m], "msg": "Field required", "type": "missing"} for m in missing],
            )
        return self._canonical(decoded)

    def _canonical(self, decoded: dict) -> dict:
        """The object with named values matched case-insensitively (and described names read), as for a bare reply."""
        root = self.schema or {}
        for name, value in decoded.items():
            if name not in self.fields or not isinstance(value, str):
                continue
            allowed = self._choices(name)
            if allowed is not None:
                matches = [a for a in allowed if str(a).casefold() == value.casefold()]
                if matches:
                    decoded[name] = matches[0]
            elif name in self.about:
                said = self.about[name].read(value, js.kind(self.fields[name], root) or "")
                if said is not None:
                    decoded[name] = said
        return decoded

    def _validate(self, action: dict) -> None:
        for name, spec in (self.card.fields.items() if self.card is not None else ()):
            if spec.values is not None and name in action and action[name] not in spec.values:
                shown = ", ".join(json.dumps(value) for value in spec.values)
                raise invalid(f"the value {json.dumps(action[name])} is not one of the allowed values for {name!r}: {shown}")
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

    def _choices(self, name: str) -> list[Any] | None:
        """The legal values of field ``name``: the action card's, else the schema's (Enum, ``Literal``), else None."""
        stated = self.card.fields[name].values if self.card is not None and name in self.card.fields else None
        return list(stated) if stated is not None else js.choices(self.fields[name], self.schema or {})

    def _description(self, name: str) -> str:
        """What field ``name`` is: the action card's words, else the schema's description ("" when neither says)."""
        stated = self.card.fields[name].description if self.card is not None and name in self.card.fields else None
        own = stated if stated is not None else js.resolve(self.fields[name], self.schema or {}).get("description")
        return " ".join(own.split()) if isinstance(own, str) else ""

    def unsettable(self) -> set[str]:
        """The action's fields a reply cannot set: those not offered, and with a free-text reply all but its field."""
        properties = set((self.schema or {}).get("properties") or {}) - js.BOOKKEEPING_ACTION_FIELDS
        settable = {self.field} if self.free_text else set(self.fields)
        return properties - settable - set(self.constants)

    def described_action(self) -> str:
        """The action's description as the model is shown it: the card's ``about``, else the schema's, without the
        lines and sentences about fields the reply cannot set."""
        root = self.schema or {}
        if self.card is not None and self.card.about is not None:
            return self.card.about.strip()
        about = root.get("description") if isinstance(root.get("description"), str) else ""
        unsettable = self.unsettable()
        return without_mentions(without_fields(about, set(self.settings) | unsettable), unsettable).strip()

    def as_card(self) -> ActionCard:
        """This format written down as an action card, to edit and give back (``openenv-prime inspect --write-card``):
        the fields offered with their descriptions and the legal values the schema or its descriptions state, the
        values filled in for the model, the example."""
        fields = {}
        for name in self.fields:
            about = self.about.get(name)
            values = self._choices(name) or (list(about.values) if about is not None and about.values else None)
            fields[name] = CardField(description=self._description(name) or None, values=values)
        about = self.described_action()
        return ActionCard(about=about or None, fields=fields, fixed=dict(self.constants),
                          reply_field=self.field if len(self.fields) > 1 else None, example=self.example())

    def settings_defaults(self) -> dict[str, Any]:
        """The fields left to the server, each with the default the server fills in (None when the schema names none)."""
        properties = (self.schema or {}).get("properties") or {}
        return {name: js.resolve(properties.get(name, {}), self.schema or {}).get("default") for name in self.settings}

    def example(self) -> dict[str, Any]:
        """The example reply: the card's, else the required fields, else those that select the action and carry its
        command, else every offered field."""
        if self.card is not None and self.card.example is not None:
            return dict(self.card.example)
        names = self.required or self.leads or tuple(self.fields)
        example = {name: self._placeholder(name, self.fields[name]) for name in names}
        return {name: "..." if value == "" else value for name, value in example.items()}  # never an empty command

    # ---- instructions -------------------------------------------------------------------------------
    @property
    def code(self) -> bool:
        """Whether the free-text field carries code, as its description or the action's first sentence says
        (repl_env's "Action containing Python code", coding_env's "code execution request"): not an answer."""
        if not self.free_text:
            return False
        root = self.schema or {}
        own = js.resolve(self.fields[self.field], root).get("description")
        return any(_CODE.search(text) for text in (self.field, own if isinstance(own, str) else "", _first_sentence(root)))

    @property
    def free_text(self) -> bool:
        """Whether any reply is an action: one free-text field that no description gives values for."""
        return self.field is not None and self._kinds[self.field][0] == "text"

    def instructions(self) -> str:
        """What the model must reply, generated from the schema. A single free-text field takes any text: only what
        the descriptions say of it is shown ("" when they say nothing beyond "the model's reply")."""
        about = self.described_action()
        lines = [f"The environment describes its action:\n{about}", ""] if about else []
        if self.free_text:
            return self._free_text(lines)
        if self.field is not None:
            return "\n".join(lines + self._single_field())
        lines.append("Reply with only a JSON object for the action, with these fields:")
        for name, spec in self.fields.items():
            lines.append(f"- \"{name}\" ({self.describe_field(name, spec)})" + self._said(name, spec))
        lines.append(f"For example: {json.dumps(self.example())}")
        if len(self.required) == 1:
            name = self.required[0]
            lines.append(f"A bare value fills \"{name}\" alone, e.g. {self._placeholder(name, self.fields[name])}.")
        return "\n".join(lines)

    def _free_text(self, lines: list[str]) -> str:
        """The class description and the field's own, when either says something (coding_env: "Represents a single
        code execution request."); nothing for chain_sum's "The model's reply to the question"."""
        name = self.field
        description = self._description(name)
        if says_only_reply(description, name):
            description = ""
        if not lines and not description:
            return ""
        said = f": {description}" + ("" if description.endswith((".", "!", "?")) else ".") if description else "."
        return "\n".join(lines + [f"Your reply is sent, as written, as the action's `{name}` field{said}"])

    def _single_field(self) -> list[str]:
        name, root = self.field, self.schema or {}
        spec = self.fields[name]
        lines = []
        description = self._description(name)
        if description:
            lines.append(f"The action's `{name}` field: {description}")
        allowed = self._choices(name)
        about = self.about.get(name)
        if allowed is not None:
            lines.append("Reply with exactly one of: " + ", ".join(str(v) for v in allowed) + " (nothing else).")
        elif about is not None and about.values is not None:
            lines.append("Reply with exactly one of these values (nothing else): "
                         + ", ".join(self._named(name, v) for v in about.values) + ".")
        else:
            if about is not None and about.common is not None:
                lines.append(f"Values allowed in every case the description gives: {_listed(about.common)}.")
            limits = js.bounds(spec, root)
            lines.append(f"Reply with only a JSON value ({js.type_name(spec, root)}{', ' + limits if limits else ''}) "
                         f"for the action's `{name}` field.")
            if about is not None and about.labels:
                value, label = next(iter(about.names.items()), (None, None))
                if label:
                    lines.append(f"A name the description gives a value also works, e.g. {_short(label)!r} for {value}.")
        return lines

    def describe_field(self, name: str, spec: dict) -> str:
        """A field's type, legal values, bounds and whether it is required, as the prompt lists it."""
        root = self.schema or {}
        resolved = js.resolve(spec, root)
        parts = [js.type_name(spec, root)]
        about = self.about.get(name)
        stated = self._choices(name)
        if stated is not None and stated != js.choices(spec, root):
            parts[0] += ", one of " + ", ".join(json.dumps(v) for v in stated)
        elif about is not None and about.values is not None:
            parts[0] += ", one of " + ", ".join(json.dumps(v) for v in about.values) + " as the description says"
        elif about is not None and about.common is not None:
            parts[0] += ", one of " + ", ".join(json.dumps(v) for v in about.common) + " in every case the description gives"
        limits = js.bounds(spec, root)
        if limits:
            parts.append(limits)
        if name in self.required:
            parts.append("required")
        elif "default" in resolved:
            parts.append(f"optional, default {json.dumps(resolved['default'])}")
        else:
            parts.append("optional")
        return ", ".join(parts)

    def _said(self, name: str, spec: dict) -> str:
        description = self._description(name)
        return f": {description}" if description else ""

    def _named(self, name: str, value: Any) -> str:
        label = self.about[name].names.get(value) if name in self.about else None
        return f"{value} ({label})" if label else str(value)

    def _placeholder(self, name: str, spec: dict) -> Any:
        stated = self._choices(name)
        if stated is not None and js.choices(spec, self.schema or {}) != stated:
            return stated[0]
        about = self.about.get(name)
        if about is not None and (about.values or about.common):
            return (about.values or about.common)[0]
        return js.placeholder(spec, self.schema or {})


_TOOL_ARGUMENTS = ("arguments", "args", "parameters")
# Names of a field that says which kind of action this is: always (action_type), or with several legal values.
_ALWAYS_SELECTS = frozenset({"actiontype", "actionkind"})
_SELECTS = frozenset({"type", "kind", "op", "operation", "verb", "actionname", "commandtype", "cmdtype"})
# Names of a text field that carries the action's command or code.
_COMMANDS = frozenset({"command", "cmd", "code", "script", "program", "query", "sql", "shell", "bash", "python",
                       "expression"})
_CODE = re.compile(r"\b(?:code|program|script|python|javascript|sql|shell|bash)\b", re.IGNORECASE)


def content_field(schema: dict, properties: dict[str, Any], constants: dict[str, Any]) -> str | None:
    """The free-text field that carries an action's content when no field is required (see the module doc): the one
    text field besides flags, else the text field the first sentence of the action's description names (by its name
    or its own description); None when neither picks exactly one."""
    texts, others = [], []
    for name, spec in properties.items():
        if name in constants:
            continue
        if js.is_text(spec, schema):
            texts.append(name)
        elif js.kind(spec, schema) != "boolean":
            others.append(name)
    if len(texts) == 1 and not others:
        return texts[0]
    first = _words(_first_sentence(schema))
    named = [name for name in texts if _names(first, name, js.resolve(properties[name], schema).get("description"))]
    return named[0] if len(named) == 1 else None


def selects(name: str, spec: Any, schema: dict) -> bool:
    """Whether field ``name`` selects what the action does: ``action_type`` (or ``action_kind``) whatever its type, or
    a ``type``/``kind``/``op``/... field with two or more legal values (the schema's, or those its descriptions
    state). Offered by default, though it has a default: a model that cannot set it can do one kind of action only."""
    key = _key(name)
    if key in _ALWAYS_SELECTS:
        return True
    if key not in _SELECTS:
        return False
    allowed = js.choices(spec, schema)
    if allowed is None:
        about = schema.get("description") if isinstance(schema.get("description"), str) else None
        said = described(name, js.resolve(spec, schema).get("description"), about, js.kind(spec, schema) or "")
        allowed = said.values or said.common
    return allowed is not None and len(allowed) >= 2


def commands(name: str, spec: Any, schema: dict) -> bool:
    """Whether field ``name`` is a text field that carries the action's command or code (``command``, ``code``, ...):
    offered by default, though its default is empty."""
    return _key(name) in _COMMANDS and js.is_text(spec, schema)


def _key(name: str) -> str:
    return re.sub(r"[\W_]+", "", name).casefold()


def tool_arguments(schema: dict, properties: dict[str, Any]) -> str | None:
    """The arguments field of a tool-call-shaped action (``tool_name`` beside an object ``arguments``), or None."""
    if "tool_name" not in properties:
        return None
    return next((name for name in _TOOL_ARGUMENTS if name in properties
                 and js.kind(properties[name], schema) == "object"), None)


def _first_sentence(schema: dict) -> str:
    """The first sentence of the action's description (its class docstring), or ""."""
    about = schema.get("description") if isinstance(schema.get("description"), str) else ""
    return re.split(r"(?<=[.!?])\s|\n\s*\n", about.strip(), maxsplit=1)[0] if about.strip() else ""


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.casefold()))


def _names(sentence: str, field: str, description: Any) -> bool:
    """Whether ``sentence`` (normalized words) names ``field``: its name as a word, or its whole description."""
    if f" {_words(field.replace('_', ' '))} " in f" {sentence} ":
        return True
    said = _words(description) if isinstance(description, str) else ""
    return bool(said) and f" {said} " in f" {sentence} "


def _listed(values: tuple[Any, ...]) -> str:
    return ", ".join(json.dumps(v) for v in values)


def _short(label: str) -> str:
    """A label without its parenthesised remark: ``turn left (90 degrees)`` -> ``turn left``."""
    return re.sub(r"\s*\([^)]*\)", "", label).strip() or label
