"""How an eval asks its policy for each open episode's next reply, and reads the answer as the engine's reply.

By default (:class:`AskInText`) the policy is asked with the prompt every consumer builds
(:meth:`~openenv_prime.client.prompts.render.EpisodeProtocol.prompt`: the system prompt with the reply format, then
the chat) and its answer is the reply text. A run that trains through tool calls (TRL's tool mode) evaluates the same
way, so its eval asks what its training asks: it passes an ``Asking`` of its own that builds the conversation its
trainer builds and reads the tool call out of each answer (:class:`openenv_prime.trl.tool_eval.ToolCallAsking`).
"""

from __future__ import annotations

from typing import Protocol

from openenv_prime.client.engine.episode import Episode
from openenv_prime.client.prompts.render import EpisodeProtocol


class Asking(Protocol):
    def prompt(self, protocol: EpisodeProtocol, base: str | None, episode: Episode) -> list[dict] | None:
        """The messages the policy is asked with for ``episode``'s next reply (``base``: the eval's system prompt);
        None ends the episode unasked (its model made its last move)."""
        ...

    def reply(self, episode: Episode, answer: str) -> str | None:
        """The reply the engine plays for the policy's ``answer`` (None ends the episode: the model made no move)."""
        ...

    def transcript(self, protocol: EpisodeProtocol, base: str | None, episode: Episode) -> list[dict]:
        """What the model of a finished ``episode`` was asked and replied, for the episode's record."""
        ...


class AskInText:
    """The text protocol: the prompt every consumer builds, the answer as the reply."""

    def prompt(self, protocol: EpisodeProtocol, base: str | None, episode: Episode) -> list[dict]:
        # the environment's own instructions, else ours (the config's system prompt); then the reply format
        return protocol.prompt(base, episode.chat, episode.opening)

    def reply(self, episode: Episode, answer: str) -> str | None:
        return str(answer)

    def transcript(self, protocol: EpisodeProtocol, base: str | None, episode: Episode) -> list[dict]:
        system = protocol.system_prompt(base, episode.opening)
        return ([{"role": "system", "content": system}] if system else []) + [dict(m) for m in episode.chat]
