"""A tool-mode run's eval asks through tool calls, as its training does (eval = train).

TRL's tool loop asks the model with the row's prompt (the base system prompt; the user message that ``reset`` fills
with the first observation), the tools declared by the chat template, and then, turn by turn, the assistant message
it parsed (its tool calls) and a ``tool`` message with each call's result (``{'error': ...}`` when the call raised).
:class:`ToolCallAsking` builds that same conversation from each eval episode, for a policy that renders it with the
same tools and chat template and parses its replies with TRL's own parser
(:class:`~openenv_prime.trl.policy.TransformersPolicy` with ``tools``); each parsed call is played through the engine
as the reply the training tool stands for (its ``reply_text``), so the eval scores a call as training does.

Where an eval turn cannot be a training turn exactly: the engine plays one action per reply, so a reply with several
calls plays its first (and the conversation keeps that one); a call of a tool that does not exist is answered as TRL
answers it (``Tool X not found.``) but counts as the episode's invalid action. A reply without a tool call ends the
episode, as it ends TRL's tool loop; so does a conversation past ``prompt_budget``, as in training. As in training's
reward function, a text environment's episode whose first reply calls no tool has that reply played as its one reply
(:meth:`~openenv_prime.trl.rewards.OpenEnvReward`'s rule for unplayed episodes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from openenv_prime.client.engine.episode import Episode
from openenv_prime.client.prompts.render import EpisodeProtocol
from openenv_prime.trl.environment import row_prompt
from openenv_prime.trl.rewards import completion_text
from openenv_prime.trl.tools import first_observation, over_budget, over_text


@dataclass
class _Turn:
    message: dict[str, Any]  # the assistant message as TRL keeps it (its first tool call)
    name: str  # the tool called
    steps: int  # the episode's steps before the call was played
    answered: str | None = None  # the tool's answer when the engine's is not TRL's (an unknown tool)


class ToolCallAsking:
    """:class:`~openenv_prime.evaluation.asking.Asking` through ``tools``, the methods TRL declares (each with its
    ``reply_text``); ``prompt_budget``: the run's, past which an episode ends as its training would."""

    def __init__(self, tools: Sequence[Callable], prompt_budget: int):
        self.replies = {tool.__name__: tool.reply_text for tool in tools if hasattr(tool, "reply_text")}
        self.prompt_budget = prompt_budget
        self.turns: dict[Episode, list[_Turn]] = {}
        self.answered: set[Episode] = set()  # text episodes whose first reply, no tool call, was played as the reply
        self.last: dict[Episode, dict[str, Any]] = {}  # the reply, calling no tool, that ended each episode's calls

    def prompt(self, protocol: EpisodeProtocol, base: str | None, episode: Episode) -> list[dict] | None:
        """The conversation TRL's tool loop would ask with; None where training would have ended the episode (a text
        episode's call-less reply played, or a conversation past the budget after a call)."""
        turns = self.turns.setdefault(episode, [])
        if episode in self.answered or (turns and over_budget(row_prompt(base), episode, self.prompt_budget)):
            return None
        return self._conversation(base, episode)

    def transcript(self, protocol: EpisodeProtocol, base: str | None, episode: Episode) -> list[dict]:
        """The conversation as the model saw it, and the reply without a tool call that ended it (where one did)."""
        last = self.last.get(episode)
        return self._conversation(base, episode) + ([dict(last)] if last is not None else [])

    def _conversation(self, base: str | None, episode: Episode) -> list[dict]:
        turns = self.turns.get(episode, [])
        messages = row_prompt(base)
        messages[-1] = {"role": "user", "content": first_observation(episode)}
        for i, turn in enumerate(turns):
            if 2 * i + 2 < len(episode.chat):  # the engine's text after the call: observation or feedback
                answer = episode.chat[2 * i + 2]["content"]
                stepped = (turns[i + 1].steps if i + 1 < len(turns) else episode.steps) > turn.steps
                content = turn.answered or (answer if stepped else str({"error": answer}))
            else:  # the call ended the episode (a transcript's last turn)
                content = over_text(episode)
            messages += [turn.message, {"role": "tool", "name": turn.name, "content": content}]
        return messages

    def reply(self, episode: Episode, answer: str) -> str | None:
        turns = self.turns.setdefault(episode, [])
        message = getattr(answer, "message", None) or {"role": "assistant", "content": str(answer)}
        calls = [call for call in message.get("tool_calls") or [] if call.get("type") == "function"]
        if not calls:
            self.last[episode] = message
            if turns or not episode.protocol.free_text:
                return None
            self.answered.add(episode)
            return completion_text([message])
        function = calls[0]["function"]
        name, arguments = str(function.get("name")), function.get("arguments") or {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                arguments = {}
        kept = {**message, "tool_calls": calls[:1]}
        turn = _Turn(kept, name, episode.steps)
        turns.append(turn)
        known = self.replies.get(name)
        if known is None or not isinstance(arguments, dict):
            turn.answered = str({"error": f"Tool {name} not found." if known is None
                                 else f"the arguments of {name} are not an object"})
            return ""  # the engine counts it invalid; the model is shown TRL's answer
        return known(arguments)
