"""What the model is shown: one set of settings, the same names and defaults in eval, the taskset and the trainer.

``EvalConfig``, the verifiers taskset's config and the MLX trainer's ``environment`` section all inherit
:class:`PromptSettings`, so a key means the same everywhere (``--observation-template`` in eval,
``observation_template`` in TOML) and an episode loop hands its config to
``EpisodeProtocol(action_schema, settings=config)``. Bad settings fail when the config is read, before any
server starts: a template that names a field that may hold the answer is one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator

from openenv_prime.client.prompts.budget import DEFAULT_PROMPT_BUDGET
from openenv_prime.client.prompts.card import ActionCard
from openenv_prime.client.prompts.hidden import DEFAULT_HIDDEN_FIELDS, HiddenNames
from openenv_prime.client.prompts.observations import DEFAULT_BUDGET, check_template


class PromptSettings(BaseModel):
    """How observations become prompt text and replies become actions (see docs/openenv.md)."""

    observation_template: str | None = Field(
        None, description="How observations are shown: a field name, or a template with {field} placeholders "
        "(e.g. '{message} at ({x}, {y})'; specs :grid, :grid=N, :text, :json); None = the default rendering.")
    observation_field: str | None = Field(
        None, description="The old name of observation_template, still accepted (set one of the two).")
    action_field: str | None = Field(
        None, description="The action field a bare reply fills; None = the action's only field.")
    action_fields: list[str] = Field(
        default_factory=list, description="Optional action fields with a default that the model may fill too "
        "(by default they are left to the server's default and not offered).")
    action_card: ActionCard | None = Field(
        None, description="An action card: a TOML or JSON file (or its table) naming the action fields the model "
        "fills, their legal values and descriptions, fixed values and an example; it replaces the format inferred from "
        "the action schema (`openenv-prime inspect` prints that one, and --write-card writes it as a card to edit). "
        "Not with action_field/action_fields.")
    observation_budget: int = Field(
        DEFAULT_BUDGET, ge=200, description="Characters per observation; fields that do not fit are left out and named.")
    prompt_budget: int = Field(
        DEFAULT_PROMPT_BUDGET, ge=400, description="Characters per prompt, the system prompt included; the oldest turns "
        "are left out first (never the system prompt, the task or the newest turn), and a note says how many.")
    hidden_fields: list[str] = Field(
        default_factory=lambda: list(DEFAULT_HIDDEN_FIELDS), description="Fields never shown to the model, at any "
        "depth (they may hold the answer); replace the list to show one an environment means the model to see.")

    @field_validator("hidden_fields", "action_fields")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        blank = [name for name in names if not isinstance(name, str) or not name.strip()]
        if blank:
            raise ValueError(f"field names must be non-empty strings, got {names}")
        return names

    @field_validator("action_card", mode="before")
    @classmethod
    def _card_file(cls, card: Any) -> Any:
        """A path (str or Path) is the card's file, read here so a bad card fails with the config."""
        return ActionCard.read(card) if isinstance(card, (str, Path)) else card

    @model_validator(mode="after")
    def _one_template_that_hides_the_answer(self) -> "PromptSettings":
        if self.action_card is not None and (self.action_field is not None or self.action_fields):
            raise ValueError("action_card says which action fields the model fills; leave action_field and "
                             "action_fields unset (or write them into the card)")
        if self.prompt_budget < 2 * self.observation_budget:
            raise ValueError(
                f"prompt_budget ({self.prompt_budget}) must hold the task and the newest observation, two observations "
                f"of observation_budget ({self.observation_budget}) characters: raise prompt_budget to at least "
                f"{2 * self.observation_budget} or lower observation_budget"
            )
        if self.observation_template is not None and self.observation_field is not None \
                and self.observation_template != self.observation_field:
            raise ValueError(
                f"observation_template ({self.observation_template!r}) and its old name observation_field "
                f"({self.observation_field!r}) are both set; keep observation_template only"
            )
        if self.template is not None:
            check_template(self.template, self.hidden)
        return self

    @property
    def template(self) -> str | None:
        """The observation template in force (``observation_template``, else its old name)."""
        return self.observation_template if self.observation_template is not None else self.observation_field

    @property
    def hidden(self) -> HiddenNames:
        return HiddenNames(self.hidden_fields)

    def prompt_settings(self) -> "PromptSettings":
        """These settings alone (from a config that carries them), e.g. to build another consumer's config."""
        return PromptSettings(**self.prompt_fields())

    def prompt_fields(self) -> dict:
        """The settings as keyword arguments for another config that carries them (the trainer's eval)."""
        return {name: getattr(self, name) for name in PromptSettings.model_fields}
