"""TRL's ``environment_factory`` for an OpenEnv server: one object per generation, the action as a typed tool.

TRL makes one object per rollout, calls ``reset(**row)`` with the dataset row at the start of each episode (here:
reset the row's task over ``/ws`` and return the first observation, rendered as every consumer renders it, gold
fields hidden), and turns every other public method into a tool from its signature and its docstring's ``Args:``.
The tool is built from the environment's action schema: the fields the model fills (as the client's
:class:`~openenv_prime.client.prompts.actions.ActionFormat` chooses them: required ones and those defaulting to null, never
server settings), their JSON types as Python types, allowed values as ``Literal``, descriptions and bounds in
``Args:``. A call is handed to the one episode engine as the reply it stands for, so validation, invalid-action
feedback (raised, which TRL shows the model), step limits and the reward follow the engine's rules. TRL keeps every
turn of its tool loop, so older turns cannot be left out of the prompt: an episode whose conversation (the system
prompt, the observations, the calls' arguments; TRL's tool declarations not counted) would exceed ``prompt_budget``
ends instead, scored on what it earned.
"""

from __future__ import annotations

import inspect
import json
import re
from typing import Any, Literal

from openenv_prime.client.engine.episode import Episode
from openenv_prime.client.prompts import schema as js
from openenv_prime.client.prompts.actions import ActionFormat
from openenv_prime.client.prompts.budget import prompt_size
from openenv_prime.trl.environment import TaskEnvironment
from openenv_prime.trl.rows import SamplerRows

_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict}


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
        own = self.episode.opening.system
        return f"{own}\n\n{self.episode.chat[-1]['content']}" if own else self.episode.chat[-1]["content"]

    def _act(self, arguments: dict[str, Any]) -> str:
        """Play the tool call as the reply it stands for; the next observation, or an error TRL shows the model."""
        episode = self.episode
        if episode is None:
            raise ValueError("No episode is running: the environment was not reset.")
        if episode.finished:
            raise ValueError("The episode is over; reply without calling a tool.")
        steps = episode.steps
        env = self._env
        env.sockets.run(episode.act(reply_for(env.protocol.action_format, arguments)))
        budget = env.config.prompt_budget
        if not episode.finished and prompt_size(env.tool_prompt() + episode.chat) > budget:
            env.sockets.run(episode.act(None))  # TRL keeps every turn of its tool loop: none can be left out
            return f"The episode is over: the conversation reached its prompt budget ({budget:,} characters)."
        if episode.finished:
            reward = episode.reward
            return f"The episode is over (reward {reward:g})." if reward is not None else "The episode is over."
        if episode.steps == steps:  # not stepped: the engine's feedback on an invalid action
            raise ValueError(episode.message)
        return episode.message


def reply_for(actions: ActionFormat, arguments: dict[str, Any]) -> str:
    """The reply text a tool call stands for, in the shape the engine parses: the free-text field's value as it is,
    one named field as ``{"field": value}``, several fields as a JSON object."""
    if actions.field is not None and actions.free_text and set(arguments) <= {actions.field}:
        return str(arguments.get(actions.field, ""))
    return json.dumps(arguments)


def environment_factory(env: TaskEnvironment, rows: SamplerRows) -> type[OpenEnvToolEnvironment]:
    """A class for ``GRPOTrainer(environment_factory=...)`` whose tool is the environment's action."""
    actions = env.protocol.action_format
    if actions is None:
        raise ValueError(f"{env.env_name!r} is an MCP environment: its tools are listed at reset, not in its action "
                         "schema, so tool mode cannot declare them to TRL; train it in text mode (tool_mode=False)")
    name = tool_name(actions)
    tool = _tool_function(name, actions)
    return type(f"{_camel(env.env_name)}ToolEnvironment", (OpenEnvToolEnvironment,),
                {"_env": env, "_rows": rows, name: tool, "__module__": __name__})


def tool_name(actions: ActionFormat) -> str:
    """The one field's name (``answer``), else the action class's title without "Action" (``grid_world``), else ``act``."""
    if actions.field is not None:
        return _identifier(actions.field)
    title = (actions.schema or {}).get("title") or ""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", re.sub(r"Action$", "", title)).lower()
    return _identifier(snake) if snake else "act"


def _tool_function(name: str, actions: ActionFormat):
    root = actions.schema or {}
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    lines = []
    for field, spec in actions.fields.items():
        hint = _hint(spec, root)
        required = field in actions.required or field == actions.field
        annotations[field] = hint if required else hint | None
        params.append(inspect.Parameter(field, inspect.Parameter.KEYWORD_ONLY, annotation=annotations[field],
                                        **({} if required else {"default": None})))
        lines.append(f"    {field}: {_arg_text(field, spec, root, actions)}")
    annotations["return"] = str

    def tool(self: OpenEnvToolEnvironment, **arguments: Any) -> str:
        return self._act({k: v for k, v in arguments.items() if v is not None})

    about = root.get("description") if isinstance(root.get("description"), str) else ""
    summary = " ".join(about.split()) or f"Take one action in the environment ({root.get('title', 'its action')})."
    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = f"{summary}\n\nArgs:\n" + "\n".join(lines) + "\n\nReturns:\n    The environment's next observation."
    tool.__signature__ = inspect.Signature(params, return_annotation=str)
    tool.__annotations__ = annotations
    return tool


def _hint(spec: dict, root: dict) -> Any:
    allowed = js.choices(spec, root)
    if allowed is not None:
        return Literal[tuple(allowed)]
    return _TYPES.get(js.kind(spec, root) or "string", str)


def _arg_text(field: str, spec: dict, root: dict, actions: ActionFormat) -> str:
    """The field's description, type and limits, and the values its description names, on one line."""
    parts = [" ".join((js.resolve(spec, root).get("description") or f"The action's {field}.").split())]
    limits = js.bounds(spec, root)
    if limits:
        parts.append(f"({limits})")
    about = actions.about.get(field)
    if about is not None and about.values is not None:
        parts.append("One of: " + ", ".join(str(v) for v in about.values) + ".")
    return " ".join(parts)


def _identifier(text: str) -> str:
    name = re.sub(r"\W+", "_", text).strip("_").lower()
    return name if name and not name[0].isdigit() and name != "reset" else f"act_{name}"


def _camel(text: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"\W+|_", text) if part) or "OpenEnv"
