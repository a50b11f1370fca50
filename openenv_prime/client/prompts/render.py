"""Text in, text out: observations become the model's prompt text, replies become actions.

A model sees text; an OpenEnv environment speaks JSON objects. The episode engine
(:mod:`openenv_prime.client.engine.episode`, which ``openenv-prime eval``, the verifiers taskset and the MLX trainer
drive) goes through :class:`EpisodeProtocol`, built once per environment from its action schema::

    protocol = EpisodeProtocol(action_schema, settings=config)   # any PromptSettings: EvalConfig, the taskset's, ...
    opening = await protocol.start(session, split="test", index=3)   # reset (+ the tool listing for MCP envs)
    messages = protocol.prompt("Solve the task.", chat, opening)   # the system prompt (by the rule below) + the chat
    action = protocol.action(reply, opening)                # InvalidRequestError (a ValueError) when it is none
    text = protocol.text(await session.step(action))        # the next user message

Whose instructions win (:meth:`EpisodeProtocol.system_prompt`, the one place that decides): an environment that
brings its own system prompt or instructions (see :mod:`~openenv_prime.client.prompts.own_system`) has them sent as
the system prompt, and ours (the consumer's ``base``) is not sent at all; ours is used only where the environment
states none. Either way the reply format from the action schema follows, where it adds something.

How replies and observations are read is in :mod:`~openenv_prime.client.prompts.actions`,
:mod:`~openenv_prime.client.prompts.observations` and :mod:`~openenv_prime.client.prompts.mcp`; what is never shown (a gold answer)
in :mod:`~openenv_prime.client.prompts.hidden`; the settings (template, budget, hidden fields, action fields) in
:mod:`~openenv_prime.client.prompts.prompting`. ``reply_to_action`` and ``observation_to_text`` are the same rules as plain
functions, for one reply or one observation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

from openenv_prime.client.prompts import mcp, own_system
from openenv_prime.client.prompts.actions import ActionFormat
from openenv_prime.client.prompts.budget import fit_prompt
from openenv_prime.client.prompts.numbers import numbers_note
from openenv_prime.client.prompts.hidden import HiddenNames
from openenv_prime.client.prompts.observations import DEFAULT_BUDGET, Rendered, render
from openenv_prime.client.prompts.prompting import PromptSettings
from openenv_prime.client.wire.session import StepResult

_formats: dict[tuple[int, str | None], tuple[Any, ActionFormat]] = {}

# A sentence of a base prompt that prescribes the reply's whole form ("Reply with only the final answer, nothing else.").
_REPLY_ONLY = re.compile(r"[^.!?\n]*\b(?:nothing else|(?:reply|respond|answer|output) (?:with )?only|only (?:with )?the "
                         r"(?:final )?(?:answer|number|result|value))\b[^.!?\n]*[.!?]?", re.IGNORECASE)
INSIDE_THE_ACTION = "Reply with the action the format below describes; your answer goes inside it."
INSIDE_THE_CALL = "Reply with a tool call as described below; your answer goes inside its arguments."


def agreeing(base: str, *, tool_call: bool) -> str:
    """``base`` without the sentences that prescribe the reply's whole form, and, where it had any, one sentence saying
    what goes inside the action (or the tool call) instead; a base that prescribes no form is returned as it is."""
    kept = _REPLY_ONLY.sub("", base)
    if kept == base:
        return base
    bridge = INSIDE_THE_CALL if tool_call else INSIDE_THE_ACTION
    return " ".join(part for part in (" ".join(kept.split()), bridge) if part)


def observation_to_text(observation: dict, field: str | None = None, metadata: dict | None = None, *,
                        budget: int | None = DEFAULT_BUDGET, hidden_fields: list[str] | None = None) -> str:
    """The text to show the model: ``observation[field]``, a ``{field}`` template filled in, or by default what the
    environment means the model to read (its text first, then its other fields within ``budget`` characters),
    falling back to ``metadata`` when that is all there is; never a hidden field (``hidden_fields``, default
    :data:`~openenv_prime.client.prompts.hidden.DEFAULT_HIDDEN_FIELDS`)."""
    hidden = HiddenNames(hidden_fields) if hidden_fields is not None else None
    return render(observation, field, metadata, budget=budget, hidden=hidden).text


def reply_to_action(reply: str, action_schema: dict | None = None, field: str | None = None) -> dict:
    """The action for a model reply (see :mod:`openenv_prime.client.prompts.actions`); MCP schemas take a JSON tool call.

    Raises :class:`InvalidRequestError` naming what is wrong when the reply is no valid action."""
    if field is None and mcp.is_mcp_action(action_schema):
        return mcp.parse_call(reply, None)
    return _format(action_schema, field).parse(reply)


def _format(action_schema: dict | None, field: str | None) -> ActionFormat:
    """One :class:`ActionFormat` per schema object (the episode loops pass the same dict every time)."""
    key = (id(action_schema), field)
    cached = _formats.get(key)
    if cached is not None and cached[0] is action_schema:
        return cached[1]
    made = ActionFormat.from_schema(action_schema, field)
    if len(_formats) > 64:
        _formats.clear()
    _formats[key] = (action_schema, made)
    return made


class _Session(Protocol):
    async def reset(self, **kwargs: Any) -> StepResult: ...
    async def step(self, action: dict) -> StepResult: ...


@dataclass(frozen=True)
class Opening:
    """The start of one episode: the reset's frame, the first user message, (MCP) the tools listed and their text
    (``listing``, the end of ``text``), and the environment's own system text, taken out of the first user message
    (None when it brings none)."""

    result: StepResult
    text: str
    tools: tuple[mcp.Tool, ...] | None = None
    system: str | None = None
    listing: str | None = None

    @property
    def observation(self) -> str:
        """The first user message without the tool listing: what a model whose tools are declared to it (TRL's
        tool mode) is shown."""
        return self.text.removesuffix(f"\n\n{self.listing}") if self.listing else self.text


class EpisodeProtocol:
    """How one environment's episodes turn into chat and back; shared by every episode of that environment.

    ``settings`` (:class:`~openenv_prime.client.prompts.prompting.PromptSettings`, or a config that inherits it: eval's,
    the taskset's, the trainer's ``environment`` section) says how observations are shown (template, budget, hidden
    fields) and which action fields the model fills. ``action_field``/``observation_field`` are a shortcut for
    settings with only those two set. MCP environments (a ``CallToolAction`` schema) are detected from the schema.
    ``declared_system``: the system texts the server's ``/splits`` entries declare, by split
    (:func:`~openenv_prime.client.prompts.own_system.declared`; :meth:`EnvironmentSetup.protocol` reads them).
    ``observation_schema``: the ``observation`` entry of ``/schema``, whose descriptions of number arrays the reply
    format repeats (:mod:`~openenv_prime.client.prompts.numbers`).
    """

    def __init__(self, action_schema: dict | None, settings: PromptSettings | None = None, *,
                 action_field: str | None = None, observation_field: str | None = None,
                 declared_system: dict[str, str] | None = None, observation_schema: dict | None = None):
        if settings is None:
            settings = PromptSettings(action_field=action_field, observation_template=observation_field)
        elif action_field is not None or observation_field is not None:
            raise TypeError("pass settings= or action_field=/observation_field=, not both")
        self.action_schema = action_schema
        self.declared_system = dict(declared_system or {})  # {split: system text} from /splits (own_system.declared)
        self.numbers = numbers_note(observation_schema, settings.hidden)  # what the observation's number arrays hold
        self.settings = settings
        self.template = settings.template
        self.hidden = settings.hidden
        self.hidden_seen: set[str] = set()  # where hidden fields were taken out, for a report (never the model)
        self.budget_notes: dict[str, None] = {}  # what the observation budget left out, for the run's warnings (in order)
        card = settings.action_card
        self.mcp = settings.action_field is None and card is None and mcp.is_mcp_action(action_schema)
        self._actions = None if self.mcp else ActionFormat.from_schema(
            action_schema, settings.action_field, settings.action_fields, card
        )

    @property
    def observation_field(self) -> str | None:
        """The observation template in force (its old name)."""
        return self.template

    @property
    def free_text(self) -> bool:
        """Whether any reply text is an action (one free-text field): the base prompt then needs nothing added."""
        return self._actions is not None and self._actions.free_text

    @property
    def action_format(self) -> ActionFormat | None:
        """How replies become actions (None for MCP environments, whose tools are listed at reset)."""
        return self._actions

    @property
    def text_field(self) -> str | None:
        """The action field a bare reply fills (None: the reply is a JSON object or a tool call)."""
        return None if self._actions is None else self._actions.field

    def reply_format(self) -> str:
        """What a reply must look like, from the schema ("" when any text will do)."""
        if self.mcp:
            return mcp.instructions() + " The tools are listed in the first message."
        return "\n\n".join(part for part in (self._actions.instructions(), self.numbers) if part)

    def instructions(self, base: str | None = None) -> str | None:
        """``base`` followed by :meth:`reply_format` (None when both are empty): the system prompt of an episode whose
        environment brings no instructions of its own. Where the reply format asks for a JSON object, a tool call or
        code (repl_env's "Action containing Python code"), ``base`` is made to agree with it (:func:`agreeing`):
        "reply with only the final answer" never stands beside them. A reply that is one value or free text
        (grid_world's move, textarena's message) keeps ``base`` as it is."""
        reply_format = self.reply_format()
        if base and reply_format and (self.mcp or self.text_field is None or self._actions.code):
            base = agreeing(base, tool_call=self.mcp)  # a JSON object, a tool call, or code
        parts = [part for part in (base, reply_format) if part]
        return "\n\n".join(parts) or None

    def system_prompt(self, base: str | None, opening: Opening | None = None) -> str | None:
        """The system prompt of an episode; the one rule for whose instructions win.

        The environment's own system text (``opening.system``) when it brings one: ours, ``base``, is then not sent,
        so it never contradicts the environment. Else ``base``; None sends no system message at all. Either is
        followed by :meth:`reply_format` where that adds something (it is not in the environment's text already);
        for a tool-call environment with its own instructions, a sentence joins the two: the reply the instructions
        describe goes into the tool call's arguments."""
        own = opening.system if opening is not None else None
        if not own:
            return self.instructions(base) if base is not None else None
        reply_format = self.reply_format()
        if self.mcp:
            reply_format += (" Write what the instructions above ask you to reply as the tool call's arguments (the tool's"
                             " input schema names where it goes).")
        parts = [own] + ([reply_format] if reply_format and reply_format not in own else [])
        return "\n\n".join(parts)

    def prompt(self, base: str | None, chat: list[dict[str, str]], opening: Opening | None = None) -> list[dict[str, str]]:
        """The messages a model is asked with: :meth:`system_prompt` (of ``base`` and the episode's ``opening``), then
        the episode's ``chat``, within ``prompt_budget`` characters (the oldest turns left out first:
        :mod:`~openenv_prime.client.prompts.budget`). The one prompt builder: training (the MLX trainer, the TRL
        integration), the verifiers taskset and every eval call it, so an eval asks a model what its training asked."""
        system = self.system_prompt(base, opening)
        return fit_prompt(([{"role": "system", "content": system}] if system else []) + list(chat),
                          self.settings.prompt_budget)

    async def start(self, session: _Session, **reset_kwargs: Any) -> Opening:
        """Reset the episode; an MCP environment's tools are listed at once and shown after the reset's text."""
        opening = self.opening(await session.reset(**reset_kwargs), reset_kwargs.get("split"))
        if not self.mcp or opening.result.done:
            return opening
        listing = await session.step(dict(mcp.LIST_TOOLS_ACTION))
        tools = tuple(mcp.tools_from(listing.observation))
        listed, note = mcp.tools_listing(list(tools), self.settings.observation_budget)
        if note is not None:
            self.budget_notes[note] = None
        return Opening(opening.result, f"{opening.text}\n\n{listed}", tools, opening.system, listed)

    def opening(self, result: StepResult, split: str | None = None) -> Opening:
        """A reset's frame as an episode's opening (before any tool listing): the first user message, and the
        environment's own system text taken out of it, else the one ``/splits`` declares for ``split``."""
        rendered = self._render(result.observation, result.metadata, first=True)
        return Opening(result, rendered.text, system=rendered.system or own_system.for_split(self.declared_system, split))

    def action(self, reply: str, opening: Opening | None = None) -> dict:
        """The action for ``reply``; :class:`InvalidRequestError` (a ``ValueError``) when it is none.
        For MCP environments ``opening`` supplies the listed tools that the call is checked against."""
        if self.mcp:
            return mcp.parse_call(reply, list(opening.tools) if opening is not None and opening.tools is not None else None)
        return self._actions.parse(reply)

    def text(self, result: StepResult) -> str:
        """The user message for a reset or step result."""
        return self.observation_text(result.observation, result.metadata)

    def observation_text(self, observation: dict, metadata: dict | None = None) -> str:
        """The user message for one observation (and the frame's top-level metadata)."""
        return self._render(observation, metadata).text

    def _render(self, observation: dict, metadata: dict | None, *, first: bool = False) -> Rendered:
        """``first``: an episode's first observation, whose own system text is taken out of it."""
        rendered = render(observation, self.template, metadata, budget=self.settings.observation_budget, hidden=self.hidden,
                          own_system=first)
        self.hidden_seen.update(rendered.hidden)
        self.budget_notes.update(dict.fromkeys(rendered.notes))
        return rendered

