"""An action card: the action format written down once, where the one inferred from the schema is wrong.

The package guesses from the action's JSON schema which fields the model fills and what they may hold
(:mod:`~openenv_prime.client.prompts.actions`). A schema written for programs can hide what a model needs:
tbench2_env's ``action_type`` is a plain ``str = "exec"`` whose reward-giving value, ``"evaluate"``, appears nowhere
in it. A card says it in a small TOML or JSON file that eval, the verifiers taskset, the MLX trainer and TRL all take
(the ``action_card`` setting), and ``openenv-prime inspect --write-card`` writes the inferred one to start from::

    about = "Run shell commands in the task's folder; evaluate when the task is done."
    reply_field = ""                 # optional: the one field a bare (non-JSON) reply fills
    example = {action_type = "exec", command = "ls"}

    [fields.action_type]
    description = "what to do"
    values = ["exec", "evaluate"]    # optional: the legal values; a reply with another is invalid

    [fields.command]
    description = "the shell command, for exec"

    [fixed]
    block = true                     # sent with every action, never offered to the model

The fields listed are the ones offered to the model, in that order; every other field of the schema is left to the
server's default (or ``fixed``). A card is checked against the server's schema before the first episode: a field
the schema lacks, a fixed or legal value the schema refuses, or an example that is no valid reply is an error.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class CardField(BaseModel):
    """One field the model fills: what it is, and its legal values when the card states them."""

    model_config = ConfigDict(extra="forbid")

    description: str | None = Field(None, description="What the field means, shown to the model in place of the "
                                    "schema's description (None: the schema's).")
    values: list[Any] | None = Field(None, min_length=1, description="The legal values, shown to the model and "
                                     "checked in each reply (matched without case); None: any value the schema takes.")


class ActionCard(BaseModel):
    """The action format for one environment: the fields offered, their legal values, fixed values and an example."""

    model_config = ConfigDict(extra="forbid")

    about: str | None = Field(None, description="What the action does, shown in place of the action's own "
                              "description (None: the schema's, without the lines about fields not offered).")
    fields: dict[str, CardField] = Field(..., min_length=1, description="The fields the model fills, in the order "
                                         "shown; every other field is left to the server's default or to `fixed`.")
    fixed: dict[str, Any] = Field(default_factory=dict, description="Values sent in every action and never offered "
                                  "to the model (e.g. block = true).")
    reply_field: str | None = Field(None, description="The one field a bare (non-JSON) reply fills; None: the only "
                                    "field when there is one, else the reply is a JSON object.")
    example: dict[str, Any] | None = Field(None, description="An example reply (a JSON object of offered fields), "
                                           "shown to the model; None: one made from the fields.")

    @model_validator(mode="after")
    def _consistent(self) -> "ActionCard":
        both = sorted(set(self.fields) & set(self.fixed))
        if both:
            raise ValueError(f"the action card both offers and fixes {both}; keep each field in one of 'fields' and "
                             "'fixed'")
        if self.reply_field is not None and self.reply_field not in self.fields:
            raise ValueError(f"the action card's reply_field {self.reply_field!r} is not one of its fields "
                             f"{sorted(self.fields)}; add it under 'fields'")
        if self.example is not None:
            unknown = sorted(set(self.example) - set(self.fields))
            if unknown:
                raise ValueError(f"the action card's example fills {unknown}, which it does not offer; its fields are "
                                 f"{sorted(self.fields)}")
        return self

    @classmethod
    def read(cls, path: str | Path) -> "ActionCard":
        """The card in a ``.toml`` or ``.json`` file; a ValueError naming the file when it cannot be read or is no card."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"cannot read the action card {path}: {exc.strerror or exc}") from None
        try:
            data = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
        except (ValueError, tomllib.TOMLDecodeError) as exc:
            kind = "TOML" if path.suffix.lower() == ".toml" else "JSON (name a TOML card *.toml)"
            raise ValueError(f"the action card {path} is not valid {kind}: {exc}") from None
        if not isinstance(data, dict):
            raise ValueError(f"the action card {path} must hold an object with 'fields', got {type(data).__name__}")
        return cls.model_validate(data)

    def to_json(self) -> str:
        """The card as the JSON file :meth:`read` takes (fields not set are left out)."""
        return json.dumps(self.model_dump(exclude_none=True, exclude_defaults=True), indent=2, ensure_ascii=False) + "\n"

    def check(self, schema: dict | None) -> None:
        """Raise a ValueError when the server's action schema has no place for this card: a field or a fixed value it
        lacks, a required field the card neither offers nor fixes. Values are checked by the format built from it."""
        if schema is None:
            return
        properties = schema.get("properties") if isinstance(schema, dict) else None
        names = sorted(properties) if isinstance(properties, dict) else []
        unknown = [name for name in (*self.fields, *self.fixed) if name not in names]
        if unknown:
            raise ValueError(f"the action card names {unknown}, which the server's action schema lacks; its fields "
                             f"are {names}")
        missing = [name for name in schema.get("required", []) if name not in self.fields and name not in self.fixed]
        if missing:
            raise ValueError(f"the action card neither offers nor fixes the required action fields {missing}; add "
                             "them under 'fields' (or 'fixed')")
