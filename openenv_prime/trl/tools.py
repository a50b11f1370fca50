"""TRL's ``environment_factory`` for an OpenEnv server: one object per generation, the action as typed tools.

TRL makes one object per rollout, calls ``reset(**row)`` with the dataset row at the start of each episode (here:
reset the row's task over ``/ws`` and return the first observation, rendered as every consumer renders it, gold
fields hidden), and turns every other public method into a tool from its signature and its docstring's ``Args:``.
For an environment with an action schema the tool is built from it: the fields the model fills (as the client's
:class:`~openenv_prime.client.prompts.actions.ActionFormat` chooses them: required ones and those defaulting to null, never
server settings), their JSON types as Python types, allowed values as ``Literal``, descriptions and bounds in
``Args:``. An MCP environment (echo_env, OpenEnv's recommended style) has one method per tool it lists
(:mod:`.mcp_tools`), listed once when the class is made; its first observation leaves the tool listing out, the
declarations carry it. A call is handed to the one episode engine as the reply it stands for, so validation,
invalid-action feedback (raised, which TRL shows the model), step limits and the reward follow the engine's rules.
Each tool function's ``reply_text(arguments)`` is that reply, which a tool-mode eval plays too (:mod:`.tool_eval`).
TRL keeps every turn of its tool loop, so older turns cannot be left out of the prompt: an episode whose
conversation (the system prompt, the observations, the calls' arguments; TRL's tool declarations not counted) would
exceed ``prompt_budget`` ends instead, scored on what it earned.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Callable

from openenv_prime.client.engine.episode import Episode
from openenv_prime.client.prompts.actions import ActionFormat
from openenv_prime.client.prompts.budget import prompt_size
from openenv_prime.trl.declarations import Argument, declare, field_text, hint, python_name
from openenv_prime.trl.environment import TaskEnvironment
from openenv_prime.trl.mcp_tools import RESERVED, tool_methods
from openenv_prime.trl.rows import SamplerRows


class OpenEnvToolEnvironment:
    """The base of the factory's classes. Public methods are tools to TRL: this class has ``reset`` only."""

    _env: TaskEnvironment
    _rows: SamplerRows

    def __init__(self) -> None:
        self.episode: Episode | None = None
        self.failure: str | None = None

    def reset(self, **row: Any) -> str:
        """Start the row's task; the first observation is appended to the row's (empty) user message. The row's
        system prompt was made before the reset, so an environment's own instructions open this text instead.

        A reset that fails is kept in ``failure``, not raised: raised here it would stop this process alone inside
        TRL's generation, leaving the others waiting in their next collective; the reward function tells every
        process instead."""
        env = self._env
        if self.episode is not None and self.episode.session is not None:
            env.sockets.run(self.episode.session.close())
        self.episode, self.failure = None, None
        try:
            episode = env.episode(self._rows.task(row["task_index"]))
            env.sockets.run(episode.start(env.pool.new_session()))
        except Exception as err:
            self.failure = f"{type(err).__name__}: {err}"
            return "The environment could not start this episode."
        self.episode = episode
        return first_observation(episode)

    def _act(self, reply: str) -> str:
        """Play a tool call as the ``reply`` it stands for; the next observation, or an error TRL shows the model."""
        episode = self.episode
        if episode is None:
            raise ValueError("No episode is running: the environment was not reset.")
        if episode.finished:
            raise ValueError("The episode is over; reply without calling a tool.")
        steps = episode.steps
        env = self._env
        env.sockets.run(episode.act(reply))
        budget = env.config.prompt_budget
        if not episode.finished and over_budget(env.tool_prompt(), episode, budget):
            env.sockets.run(episode.act(None))  # TRL keeps every turn of its tool loop: none can be left out
            return f"The episode is over: the conversation reached its prompt budget ({budget:,} characters)."
        if episode.finished:
            return over_text(episode)
        if episode.steps == steps:  # not stepped: the engine's feedback on an invalid action
            raise ValueError(episode.message)
        return episode.message


def first_observation(episode: Episode) -> str:
    """What ``reset`` returns: the environment's own instructions (a row's system prompt is made before its reset),
    then the first observation; an MCP environment's tool listing is left out, its tools being declared."""
    own, text = episode.opening.system, episode.opening.observation
    return f"{own}\n\n{text}" if own else text


def over_text(episode: Episode) -> str:
    """What the tool call that ended ``episode`` answers."""
    reward = episode.reward
    return f"The episode is over (reward {reward:g})." if reward is not None else "The episode is over."


def over_budget(tool_prompt: list[dict[str, str]], episode: Episode, budget: int) -> bool:
    """Whether an episode's conversation has outgrown ``prompt_budget``: TRL keeps every turn, so it ends instead."""
    return prompt_size(tool_prompt + episode.chat) > budget


def reply_for(actions: ActionFormat, arguments: dict[str, Any]) -> str:
    """The reply text a tool call stands for, in the shape the engine parses: the free-text field's value as it is,
    one named field as ``{"field": value}``, several fields as a JSON object."""
    if actions.field is not None and actions.free_text and set(arguments) <= {actions.field}:
        return str(arguments.get(actions.field, ""))
    return json.dumps(arguments)


def environment_factory(env: TaskEnvironment, rows: SamplerRows) -> type[OpenEnvToolEnvironment]:
    """A class for ``GRPOTrainer(environment_factory=...)`` whose tools are the environment's action, or an MCP
    environment's tools (listed once here, on the first train task)."""
    actions = env.protocol.action_format
    if actions is None:
        methods, note = tool_methods(list(env.listed_tools()), env.config.observation_budget)
        if note is not None:
            print(f"warning: {note}", file=sys.stderr)
    else:
        name = tool_name(actions)
        methods = {name: _tool_function(name, actions)}
    return type(f"{_camel(env.env_name)}ToolEnvironment", (OpenEnvToolEnvironment,),
                {"_env": env, "_rows": rows, **methods, "__module__": __name__})


def tool_name(actions: ActionFormat) -> str:
    """The one field's name (``answer``), else the action class's title without "Action" (``grid_world``), else ``act``."""
    if actions.field is not None:
        return python_name(actions.field, lower=True, prefix="act", reserved=RESERVED)
    title = (actions.schema or {}).get("title") or ""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", re.sub(r"Action$", "", title)).lower()
    return python_name(snake, lower=True, prefix="act", reserved=RESERVED) if snake else "act"


def _tool_function(name: str, actions: ActionFormat) -> Callable:
    root = actions.schema or {}
    arguments = [Argument(field, hint(spec, root), field in actions.required or field == actions.field,
                          _arg_text(field, spec, root, actions))
                 for field, spec in actions.fields.items()]

    def reply_text(given: dict[str, Any]) -> str:
        return reply_for(actions, {key: value for key, value in given.items() if value is not None})

    def tool(self: OpenEnvToolEnvironment, **given: Any) -> str:
        return self._act(reply_text(given))

    about = root.get("description") if isinstance(root.get("description"), str) else ""
    summary = " ".join(about.split()) or f"Take one action in the environment ({root.get('title', 'its action')})."
    tool.reply_text = reply_text
    return declare(tool, name, summary, arguments)


def _arg_text(field: str, spec: dict, root: dict, actions: ActionFormat) -> str:
    """The field's description, type and limits, and the values its description names, on one line."""
    about = actions.about.get(field)
    named = f" One of: {', '.join(str(v) for v in about.values)}." if about is not None and about.values is not None else ""
    return field_text(field, spec, root, whose="action's ") + named


def _camel(text: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"\W+|_", text) if part) or "OpenEnv"
