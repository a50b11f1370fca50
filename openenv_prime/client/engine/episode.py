"""The one episode engine: reset -> render -> act -> step -> feedback and limits -> reward, for every consumer.

`openenv-prime eval`, the verifiers taskset and the MLX trainer play their episodes here, under one
:class:`~openenv_prime.client.engine.episode_rules.EpisodeRules`; each supplies only how it gets replies and what it
records. A driver builds :class:`Episode` objects, resets them (:meth:`Episode.start`, or a wave at once on a
:class:`~openenv_prime.client.wire.session_pool.SessionPool`'s kept sockets with :func:`start_wave`), and hands them
to :func:`play` with its ``replies`` function::

    async def replies(episodes):          # the open episodes of this round, in order: one reply text each
        return [await model(protocol.prompt(base, ep.chat)) for ep in episodes]   # (None: the driver ends it)

    episode = Episode(protocol, rules, {"split": "test", "index": 3}, episode_id="run-1", open_session=new_session)
    await episode.start(session)
    await play([episode], replies)
    episode.reward, episode.steps, episode.invalid_actions, episode.stop

Each round asks ``replies`` once for every open episode, so a driver can generate them in one batch
(the trainer's MLX generation, the eval's policy), then acts on each reply:

- an empty reply, one that is no action for the schema, or one the server rejects is an invalid action: fed back
  (``rules.feedback``) and counted; the one after ``rules.max_invalid_actions`` ends the episode;
- a step the environment answers with an error (an ``EXECUTION_ERROR``: it raised while running the action) is an
  invalid action too: its message, cut to the observation budget, is the model's next user message and the episode
  goes on on the same session (the rule below says when it is the environment's failure instead);
- an accepted step records its reward (None when the environment gave none) and shows the next observation;
  a step the environment flags as invalid (``rules.invalid_flags``), or whose observation reports that the action
  failed (``rules.invalid_errors``: an error string, a traceback), counts as an invalid action too;
- the episode ends when the environment says ``done``, after ``rules.max_steps`` steps, past the invalid limit,
  when the server refuses a reply as too large (WebSocket close code 1009), or when ``replies`` gives None;
- a step the environment fails (a socket it closes for good, no answer in time, a frame that is not the protocol,
  an error answering every action alike) ends the episode with stop ``"error"`` and no reward, and the run goes on
  (:mod:`~openenv_prime.client.engine.failures`).

**The action was wrong, or the environment is broken?** openenv answers an exception raised in ``step`` with an
``EXECUTION_ERROR`` frame and keeps the session, whatever raised: finrl_env's "Action dimension mismatch: expected 1,
got 2" (the reply's fault, which the model can fix) and dipg_safety_env's "'StepResult' object has no attribute
'model_dump'" (the environment's, on every step) look alike on the wire. The rule:

- an error answering a step is the action's: the model reads it and tries again, as TRL feeds a tool's exception back;
- the invalid-action limit is the test: when the action that goes past it draws an error too, and every action the
  environment was sent since its last accepted step (since the reset, if none) drew that same error text, the
  errors follow every action alike, and the episode is the environment's failure (stop ``"error"``, unscored, its
  error actions not counted as invalid, the socket replaced). A reply that is no action, or a rejection that
  differs, breaks "alike"; so does any error text that differs ("got 2" and then "got 3" is a model's mistakes).
  A model that repeats one mistake the environment names the same way every time looks just like a broken
  environment; :class:`~openenv_prime.client.engine.failures.ErrorStreak` says which of the two a stopped run saw;
- a driver that stops the episode right after such an error (TRL's text mode gives each episode one reply) left
  the model no turn to read it: the errors are called as at the limit;
- an error at reset, a socket the server closes (``SESSION_ERROR``, a drop a replay cannot restore) or an answer
  that never comes is the environment's failure at once: nothing the model wrote caused it.

The reward is :func:`~openenv_prime.client.engine.rewards.episode_reward` of the step rewards. A socket the server drops
mid-episode is replaced and the episode replayed on it when ``rules.replay`` is set (see the rules' doc).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable, Literal, Sequence

from openenv_prime.client.engine.episode_rules import EpisodeRules
from openenv_prime.client.engine.failures import ErrorStreak
from openenv_prime.client.engine.rewards import episode_reward
from openenv_prime.client.engine.spend import episode_spend, step_spend
from openenv_prime.client.prompts.observations import cut_text
from openenv_prime.client.prompts.render import EpisodeProtocol, Opening
from openenv_prime.client.wire.errors import (ConnectionDroppedError, ExecutionError, InvalidRequestError, OpenEnvError,
                                              OpenEnvTimeoutError, ServerError)
from openenv_prime.client.wire.session import EpisodeSession, StepResult
from openenv_prime.client.wire.session_pool import SessionPool

MESSAGE_TOO_BIG = 1009
"""WebSocket close code: the server refused a message as too large."""

Stop = Literal["done", "max_steps", "invalid_action", "too_large", "stopped", "error"]
"""Why an episode ended: the environment said done, the step limit, the invalid-action limit (or the environment
ended it for an invalid action), a reply the server refused as too large, the driver stopped it, or the environment
failed a step (unscored)."""

Replies = Callable[[list["Episode"]], Awaitable[Sequence["str | None"]]]


class Episode:
    """One episode's state from reset to reward. ``context`` is the driver's own record (a task, a transcript).

    ``chat`` holds the whole conversation since the reset (user texts and the model's replies); while the episode is
    open its last entry is the user message the next reply answers (:attr:`message`). The model is asked with
    ``protocol.prompt(base, chat)``: the system prompt and the chat within the prompt budget (older turns left out)."""

    def __init__(self, protocol: EpisodeProtocol, rules: EpisodeRules, reset_kwargs: dict[str, Any], *,
                 open_session: Callable[[], EpisodeSession], episode_id: str | None = None, context: Any = None):
        self.protocol = protocol
        self.rules = rules
        self.reset_kwargs = dict(reset_kwargs) if episode_id is None else {**reset_kwargs, "episode_id": episode_id}
        self.open_session = open_session
        self.context = context
        self.session: EpisodeSession | None = None
        self.opening: Opening | None = None
        self.chat: list[dict[str, str]] = []
        self.shown: list[str] = []  # the observation texts the model saw, for replay checks
        self.actions: list[dict[str, Any]] = []  # every action stepped, for replay
        self.refused: list[bool] = []  # per action stepped: whether the environment answered it with an error
        self.answers: list[str] = []  # the errors answering each action since the last accepted step ("alike")
        self.step_rewards: list[float | None] = []
        self.step_spends: list[float | None] = []  # per accepted step: metadata["service_spend"] (None: not reported)
        self.step_seconds: list[float] = []
        self.steps = 0
        self.turns = 0
        self.invalid_actions = 0
        self.reconnects = 0
        self.done = False
        self.stop: Stop | None = None
        self.error: str | None = None  # why the episode failed without the environment scoring it
        self.alike = 0  # actions the environment answered with one same error before its failure was called (0: none)
        self._unread: ExecutionError | None = None  # the error answering the last action, until the next reply
        self.last_reply = ""

    # ---- what drivers read --------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        return self.stop is not None

    @property
    def message(self) -> str | None:
        """The user message the next reply answers (None once the episode is finished)."""
        return None if self.finished else self.chat[-1]["content"]

    @property
    def reward(self) -> float | None:
        """The episode's reward; None when the environment ended it without scoring any step, or failed a step (left
        out, never 0.0). An episode the environment ended for an invalid action is scored like one the invalid limit
        ended."""
        if self.stop == "error":
            return None
        ended_by_env = self.done and self.stop != "invalid_action"
        return episode_reward(self.step_rewards, ended_by_env, self.rules.reward_mode, self.rules.reward_clip)

    @property
    def service_spend(self) -> float | None:
        """What the environment reported the episode cost it (``metadata["service_spend"]`` summed over the accepted
        steps; :mod:`~openenv_prime.client.engine.spend`); None when no step reported it."""
        return episode_spend(self.step_spends)

    # ---- the state machine --------------------------------------------------------------------------
    async def start(self, session: EpisodeSession) -> None:
        """Reset on ``session``; a socket the server dropped while idle is replaced first (``rules.replay``)."""
        self.session = session
        try:
            self.opening = await self.protocol.start(self.session, **self.reset_kwargs)
        except ConnectionDroppedError:
            if not self.rules.replay:
                raise
            await self._reconnect()
            self.opening = await self.protocol.start(self.session, **self.reset_kwargs)
        self._show(self.opening.text)
        if self.opening.result.done:
            self.done = True
            self.stop = "done"

    async def act(self, reply: str | None) -> None:
        """One turn: ``reply`` becomes an action and is stepped, or is fed back as invalid; None ends the episode."""
        if self.finished:
            raise RuntimeError("act() on a finished episode")
        unread, self._unread = self._unread, None
        if reply is None:
            if unread is not None and self._alike():  # the model had no turn to read the error (TRL's text mode)
                return await self._environment_failed(unread, counted=len(self.answers))
            self.stop = "stopped"
            return
        self.turns += 1
        self.last_reply = reply
        self.chat.append({"role": "assistant", "content": reply})
        if not reply.strip():
            return self._invalid("Your reply was empty.")
        try:
            action = self.protocol.action(reply, self.opening)
        except ValueError as error:  # InvalidRequestError is a ValueError
            return self._invalid(f"Your reply is not a valid action: {getattr(error, 'message', error)}")
        try:
            result = await self._step(action)
        except InvalidRequestError as error:
            self.answers.append(None)  # a rejection: the server told this action from others
            return self._invalid(f"The environment rejected that action: {self._cut(error.message)}")
        except ExecutionError as error:
            return await self._refused(action, error)
        except ConnectionDroppedError as error:
            if error.close_code != MESSAGE_TOO_BIG:
                return await self._failed(error)
            self.error = f"the server refused the action as too large ({len(reply)} characters; WebSocket close code 1009)"
            self.stop = "too_large"
            return
        except (ServerError, OpenEnvTimeoutError) as error:
            return await self._failed(error)
        await self._accepted(action, result)

    async def _refused(self, action: dict[str, Any], error: ExecutionError) -> None:
        """The environment raised on ``action``: the model's invalid action, or past the invalid limit with every
        action since the last accepted step answered alike, the environment's failure (the module doc's rule)."""
        self.actions.append(action)
        self.refused.append(True)
        self.answers.append(error.detail)
        if self.invalid_actions >= self.rules.max_invalid_actions and self._alike():
            return await self._environment_failed(error, counted=len(self.answers) - 1)
        said = error.detail.strip() or "(it gave no message)"
        self._invalid(f"The environment answered that action with an error: {self._cut(said)}")
        self._unread = error

    def _alike(self) -> bool:
        """Whether every action since the last accepted step drew one same error (no rejection among them)."""
        return bool(self.answers) and None not in self.answers and len(set(self.answers)) == 1

    async def _environment_failed(self, error: ExecutionError, *, counted: int) -> None:
        """Errors alike, called the environment's failure: the ``counted`` of them already counted as the model's
        invalid actions no longer are."""
        self.alike = len(self.answers)
        self.invalid_actions -= counted
        await self._failed(error)

    def _cut(self, text: str) -> str:
        """An error's text for the model: whole, or its start and end within the observation budget."""
        budget = self.protocol.settings.observation_budget
        return text if budget is None else cut_text(text, budget, "the error")

    async def _failed(self, error: OpenEnvError) -> None:
        """The environment failed the step: the episode ends unscored, on a socket nobody reuses."""
        alike = f" (as it answered all {self.alike} actions since its last accepted step)" if self.alike > 1 else ""
        self.error = f"step {self.steps + 1} failed inside the environment{alike}: {error.message}"
        self.stop = "error"
        await self.session.close()
        self.session = self.open_session()

    def _invalid(self, problem: str) -> None:
        self.invalid_actions += 1
        if self.invalid_actions > self.rules.max_invalid_actions:
            self.stop = "invalid_action"
        else:
            self.chat.append({"role": "user", "content": self.rules.feedback_text(problem)})

    async def _accepted(self, action: dict[str, Any], result: StepResult) -> None:
        self.actions.append(action)
        self.refused.append(False)
        self.answers.clear()
        self.steps += 1
        self.step_rewards.append(result.reward)
        self.step_spends.append(step_spend(result.metadata))
        self.done = result.done
        flagged = (self.rules.flags_invalid(result.observation, result.metadata)
                   or self.rules.reports_error(result.observation, result.metadata))
        if not flagged and result.done and self.rules.invalid_flags_in_state:
            flagged = self.rules.flags_invalid(await self._state())
        if flagged:
            self.invalid_actions += 1
        if result.done:
            self.stop = "invalid_action" if flagged else "done"
        elif flagged and self.invalid_actions > self.rules.max_invalid_actions:
            self.stop = "invalid_action"
        elif self.steps >= self.rules.max_steps:
            self.stop = "max_steps"
        else:
            self._show(self.protocol.text(result))

    def _show(self, text: str) -> None:
        self.shown.append(text)
        self.chat.append({"role": "user", "content": text})

    async def _state(self) -> dict[str, Any]:
        try:
            return await self.session.state()
        except ServerError:  # an environment that cannot report its state
            return {}

    # ---- a dropped socket ---------------------------------------------------------------------------
    async def _step(self, action: dict[str, Any]) -> StepResult:
        started = time.perf_counter()
        try:
            result = await self.session.step(action)
        except ConnectionDroppedError as error:
            if error.close_code == MESSAGE_TOO_BIG or not self.rules.replay:
                raise  # replaying would only send it again
            try:
                await self._replay()
            except ExecutionError as error:  # the environment failed the replay's reset or steps, not this action
                raise ServerError(f"replaying the episode on a new socket failed: {error.message}", url=error.url) from None
            result = await self.session.step(action)
        self.step_seconds.append(round(time.perf_counter() - started, 6))
        return result

    async def _reconnect(self) -> None:
        await self.session.close()
        self.session = self.open_session()
        self.reconnects += 1

    async def _replay(self) -> None:
        """Rebuild the episode on a new socket: reset, re-send the actions stepped (those the environment answered
        with an error too: raising may have changed its state), check every observation."""
        await self._reconnect()
        opening = await self.protocol.start(self.session, **self.reset_kwargs)
        if opening.text != self.shown[0]:
            self._not_replayed(0)
        self.opening = opening
        accepted = 0
        for action, refused in zip(self.actions, self.refused):
            try:
                result = await self.session.step(action)
            except ExecutionError:
                if refused:
                    continue
                raise
            accepted += 1
            if refused or (accepted < len(self.shown) and self.protocol.text(result) != self.shown[accepted]):
                self._not_replayed(accepted)

    def _not_replayed(self, turn: int) -> None:
        raise ServerError(
            f"the episode reset with {self.reset_kwargs} showed a different observation at turn {turn} when replayed "
            "on a new socket after the server dropped the old one, so the episode cannot be resumed",
            url=self.session.url,
            hint="keep the policy from blocking the event loop for long (run generation with asyncio.to_thread)",
        )


async def play(episodes: Sequence[Episode], replies: Replies) -> None:
    """Rounds until every episode is finished: one ``replies`` call for the open ones, then one act each."""
    while active := [episode for episode in episodes if not episode.finished]:
        answers = await replies(active)
        if len(answers) != len(active):
            raise ValueError(f"replies() returned {len(answers)} replies for {len(active)} episodes; it must return one per episode")
        await asyncio.gather(*(episode.act(answer) for episode, answer in zip(active, answers)))


async def start_wave(pool: SessionPool, pending: Sequence[Episode], limit: int) -> list[Episode]:
    """Reset the first of ``pending`` on the pool's sessions, at most ``limit``; returns the started ones.

    On any failure every socket is closed: one that failed mid-exchange must not be reused."""
    sessions = await pool.open(min(limit, len(pending)))
    wave = list(pending[:len(sessions)])
    try:
        await asyncio.gather(*(episode.start(session) for episode, session in zip(wave, sessions)))
    except BaseException:
        await pool.close()
        raise
    return wave


def keep_wave(pool: SessionPool, wave: Sequence[Episode]) -> None:
    """After a wave started by :func:`start_wave`: the pool keeps each episode's socket (a replayed one's new socket)."""
    pool.keep([episode.session for episode in wave])


async def play_in_waves(pool: SessionPool, episodes: Sequence[Episode], replies: Replies, *, limit: int,
                        started: Sequence[Episode] = (), streak: ErrorStreak | None = None) -> None:
    """Play ``episodes`` in order, in waves of at most ``limit`` on the pool's sessions (fewer when the server
    admits fewer). ``started``: a first wave already reset by :func:`start_wave`, the first of ``episodes``.
    ``streak``: the run's count of episodes the environment failed in a row, which stops the run when it is full.

    On any failure the pool's sockets are closed: one that failed mid-exchange must not be reused."""
    played = 0
    try:
        wave = list(started)
        while True:
            if wave:
                await play(wave, replies)
                keep_wave(pool, wave)
                played += len(wave)
                if streak is not None:
                    streak.record(wave)
            if played >= len(episodes):
                return
            wave = await start_wave(pool, episodes[played:], limit)
    except BaseException:
        await pool.close()
        raise
