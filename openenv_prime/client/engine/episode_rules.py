"""How every episode is played and scored: one set of rules, with one set of defaults, for `openenv-prime eval`,
the verifiers taskset and the MLX trainer, so a model is evaluated by the rule it was trained on.

The defaults, and why:

- ``max_steps`` 16: environment steps before the episode is cut off (scored on what it earned; eval reports it
  as truncated).
- ``max_invalid_actions`` 3: invalid replies (empty, not an action, or rejected by the server) fed back to the
  model; the next one ends the episode. The eval used 2 and the taskset and trainer 3; the eval now scores as
  training does.
- ``reward_mode`` "sum", ``reward_clip`` None: how the scored steps' rewards become the episode's reward
  (:func:`openenv_prime.client.engine.rewards.episode_reward`; a step without a reward is left out, and an episode the
  environment ended without scoring any step has no reward at all).
- ``feedback``: the user message after an invalid reply, ``{problem}`` filled in with what was wrong.
- ``replay`` True: when the server drops an episode's socket (a keepalive timeout while a long generation blocked
  the event loop, a reused socket closed while idle), reset the same task on a new socket, re-send the accepted
  actions and check that every observation is the one the model saw, then go on. Nothing the model saw changes.
- ``invalid_flags`` ("invalid_action", "invalid_move"): an environment may accept a step and still call the action
  invalid, or end the episode for it (textarena ends a game after its second format error). A step whose
  observation or metadata holds one of these keys set to ``true`` (at any depth) counts as an invalid action,
  and an episode the environment ends that way stops as ``invalid_action``, scored 0.0 when it earned nothing,
  never left out as unscored. ``invalid_flags_in_state`` also asks the environment's ``state()`` when it ends an
  episode (textarena keeps its flag there, in ``raw_state.game_info``): one more message per episode.
- ``invalid_errors`` True: a step whose observation reports that the action failed counts as an invalid action too
  (coding_env runs every reply and reports a ``SyntaxError`` only in its ``stderr``). Conservative, on the top level
  of the observation and of its metadata only: a non-empty ``error`` or ``exception`` string, a non-zero
  ``exit_code`` with a Python traceback or a ``SyntaxError`` in ``stderr``, or a field holding a tool result whose
  ``isError`` is true (calendar_env answers a failed tool with ``success: true`` and ``tool_result.isError``). A failure an environment reports any other
  way (a message in prose, a reward of 0, an error object) cannot be told from a move that was merely bad.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from openenv_prime.client.engine.rewards import check_clip

REWARD_MODES = ("sum", "last", "max")
_FLAG_DEPTH = 4  # textarena: state -> raw_state -> game_info -> player -> invalid_move
ERROR_FIELDS = ("error", "exception")
"""Observation or metadata fields that, a non-empty string, report that the step's action failed."""
TOOL_ERROR_FLAGS = ("isError", "is_error")
"""Flags of a tool result (MCP's ``CallToolResult.isError``) that, true one level down, report that the call failed."""
_PYTHON_FAILURE = re.compile(r"Traceback \(most recent call last\)|\b(?:SyntaxError|IndentationError|TabError)\b")


@dataclass(frozen=True)
class EpisodeRules:
    """Limits, scoring and feedback of every episode (see the module doc for the defaults and why)."""

    max_steps: int = 16
    max_invalid_actions: int = 3
    reward_mode: str = "sum"
    reward_clip: tuple[float, float] | None = None
    feedback: str = "{problem} Try again; reply with only the action."
    replay: bool = True
    invalid_flags: tuple[str, ...] = ("invalid_action", "invalid_move")
    invalid_flags_in_state: bool = False
    invalid_errors: bool = True

    def __post_init__(self) -> None:
        for name, low in (("max_steps", 1), ("max_invalid_actions", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if self.reward_mode not in REWARD_MODES:
            raise ValueError(f"reward_mode {self.reward_mode!r} is not one of {', '.join(map(repr, REWARD_MODES))}")
        if self.reward_clip is not None:
            object.__setattr__(self, "reward_clip", check_clip(tuple(float(v) for v in self.reward_clip)))
        if "{problem}" not in self.feedback:
            raise ValueError(f"feedback must contain '{{problem}}' (what was wrong with the reply), got {self.feedback!r}")
        if isinstance(self.invalid_flags, str):
            raise ValueError(f"invalid_flags must be a list of key names, got the string {self.invalid_flags!r}")
        object.__setattr__(self, "invalid_flags", tuple(self.invalid_flags))

    def feedback_text(self, problem: str) -> str:
        """The user message after an invalid reply (``problem`` ends as a sentence)."""
        problem = problem.rstrip()
        return self.feedback.replace("{problem}", problem if problem.endswith((".", "!", "?")) else problem + ".")

    def flags_invalid(self, *documents: Any) -> bool:
        """Whether any of ``documents`` (an observation, its metadata, a state) holds an invalid-action flag set to true."""
        return bool(self.invalid_flags) and any(_flagged(doc, self.invalid_flags, _FLAG_DEPTH) for doc in documents)

    def reports_error(self, observation: Any, metadata: Any = None) -> bool:
        """Whether a step's observation (or its metadata) reports that the action failed (see ``invalid_errors``)."""
        return self.invalid_errors and any(_failed(doc) for doc in (observation, metadata))


DEFAULT_RULES = EpisodeRules()
"""The defaults every consumer's config starts from."""


def _failed(document: Any) -> bool:
    if not isinstance(document, Mapping):
        return False
    if any(isinstance(document.get(name), str) and document[name].strip() for name in ERROR_FIELDS):
        return True
    if any(isinstance(value, Mapping) and any(value.get(flag) is True for flag in TOOL_ERROR_FLAGS)
           for value in document.values()):
        return True  # a tool result that says it failed (MCP's isError), e.g. calendar_env's tool_result
    exit_code, stderr = document.get("exit_code"), document.get("stderr")
    return (isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0
            and isinstance(stderr, str) and _PYTHON_FAILURE.search(stderr) is not None)


def _flagged(value: Any, flags: tuple[str, ...], depth: int) -> bool:
    if depth < 0:
        return False
    if isinstance(value, Mapping):
        if any(value.get(flag) is True for flag in flags):
            return True
        return any(_flagged(inner, flags, depth - 1) for inner in value.values() if isinstance(inner, (Mapping, list)))
    if isinstance(value, list):
        return any(_flagged(inner, flags, depth - 1) for inner in value if isinstance(inner, (Mapping, list)))
    return False
