"""Episodes over an OpenEnv server's ``/ws`` endpoint: one socket is one server-side environment is one episode.

HTTP ``/reset`` and ``/step`` build a fresh environment per request, so an episode has to keep its socket.
Everything here is bounded: each send/receive has ``timeout``, a socket that timed out, was cancelled or
sent garbage is dropped (never reused, since its replies could be out of step), and a server at its session
limit (``CAPACITY_REACHED``) is retried with capped, jittered backoff for at most ``capacity_wait`` seconds.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import json
import weakref
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.uri import parse_uri

try:
    from websockets.proxy import get_proxy
except ImportError:  # websockets 15.x keeps the same function in websockets.uri (moved to websockets.proxy in 16.0)
    from websockets.uri import get_proxy

from openenv_prime.client.wire.backoff import backoff
from openenv_prime.client.wire.errors import (
    CapacityError,
    ConnectionDroppedError,
    ExecutionError,
    InvalidRequestError,
    OpenEnvError,
    OpenEnvTimeoutError,
    ServerError,
    ServerUnreachableError,
)
from openenv_prime.client.wire.urls import ws_endpoint

_CONNECT_ATTEMPTS = 3
_MAX_FRAME_BYTES = 2**24
_CLIENT_ERROR_CODES = {"VALIDATION_ERROR", "INVALID_JSON", "UNKNOWN_TYPE"}


@dataclass(frozen=True, slots=True)
class StepResult:
    """One observation frame: what ``reset`` and ``step`` return."""

    observation: dict
    reward: float | None
    done: bool
    metadata: dict = field(default_factory=dict)


class _Gate:
    """A counting limit on open sessions whose limit can change; waiters are served first come, first served."""

    def __init__(self, limit: int):
        self.limit = limit
        self.active = 0
        self._waiters: collections.deque[asyncio.Future] = collections.deque()

    async def acquire(self, timeout: float) -> None:
        if self.active < self.limit and not self._waiters:
            self.active += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter, timeout)
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.release()  # the slot arrived as we gave up: pass it on
            elif waiter in self._waiters:
                self._waiters.remove(waiter)
            raise

    def release(self) -> None:
        while self._waiters and self.active <= self.limit:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # hand the slot over; ``active`` stays the same
                return
        self.active -= 1

    def set_limit(self, limit: int) -> None:
        self.limit = limit
        while self._waiters and self.active < self.limit:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.active += 1
                waiter.set_result(None)


@functools.lru_cache(maxsize=256)
def _proxy_for(url: str) -> str | None:
    """The proxy the environment (HTTPS_PROXY, NO_PROXY, ...) names for ``url``, looked up once per URL:
    websockets would otherwise scan the whole environment on every connect, a third of a short episode's CPU."""
    return get_proxy(parse_uri(url))


# One gate per (event loop, /ws URL): asyncio primitives belong to one loop, and a process normally runs one.
_gates: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _Gate]]" = weakref.WeakKeyDictionary()


def _gate_for(url: str, limit: int) -> _Gate:
    per_loop = _gates.setdefault(asyncio.get_running_loop(), {})
    gate = per_loop.get(url)
    if gate is None:
        gate = per_loop[url] = _Gate(limit)
    elif gate.limit != limit:
        gate.set_limit(limit)  # the latest session's max_sessions wins
    return gate


class EpisodeSession:
    """An async episode over ``/ws``: ``reset(**kwargs)``, ``step(action)``, ``state()``, ``close()``.

    ``max_sessions`` caps how many sessions to this URL are open at once in this event loop (set it to the
    server's ``--max-sessions`` so that sessions queue here instead of being refused); waiting for a slot and
    waiting out ``CAPACITY_REACHED`` are each bounded by ``capacity_wait`` seconds.
    """

    def __init__(self, base_url: str, *, timeout: float = 30.0, max_sessions: int | None = None, capacity_wait: float = 60.0):
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if max_sessions is not None and (not isinstance(max_sessions, int) or isinstance(max_sessions, bool) or max_sessions < 1):
            raise ValueError(f"max_sessions must be None or an int >= 1, got {max_sessions!r}")
        if not isinstance(capacity_wait, (int, float)) or capacity_wait < 0:
            raise ValueError(f"capacity_wait must be a number of seconds >= 0, got {capacity_wait!r}")
        self.url = ws_endpoint(base_url)
        self.timeout = float(timeout)
        self.max_sessions = max_sessions
        self.capacity_wait = float(capacity_wait)
        self.capacity_retries = 0  # CAPACITY_REACHED refusals waited out, for diagnostics
        self._ws: ClientConnection | None = None
        self._fresh = False  # no message answered yet on this socket: a CAPACITY_REACHED frame may be waiting
        self._gate: _Gate | None = None
        self._dropped: str | None = None
        self._closed = False
        self._busy = asyncio.Lock()

    async def __aenter__(self) -> "EpisodeSession":
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---- public API -------------------------------------------------------------------------------
    async def connect(self) -> None:
        """Open the socket (waiting for a local slot first when ``max_sessions`` is set); reset() does this too."""
        self._check_usable()
        if self._ws is not None:
            return
        if self.max_sessions is not None and self._gate is None:
            gate = _gate_for(self.url, self.max_sessions)
            try:
                await gate.acquire(self.capacity_wait)
            except TimeoutError:
                raise CapacityError(
                    f"waited {self.capacity_wait:g}s for one of this process's {self.max_sessions} session slots",
                    url=self.url,
                    hint="other sessions to this URL stayed open; close them, raise max_sessions, or raise capacity_wait",
                ) from None
            self._gate = gate
        try:
            await self._open()
        except BaseException:
            self._release_gate()
            raise

    async def reset(self, **kwargs: Any) -> StepResult:
        """Start the episode, e.g. ``reset(split="test", index=7)``; the keywords go to the environment's reset()."""
        return await self._exchange({"type": "reset", "data": kwargs}, "observation")

    async def step(self, action: dict) -> StepResult:
        """Send one action (the action's fields, e.g. ``{"answer": "42"}``)."""
        if not isinstance(action, dict):
            raise TypeError(f"action must be a dict of the action's fields, e.g. {{'answer': '42'}}, got {type(action).__name__}")
        return await self._exchange({"type": "step", "data": action}, "observation")

    async def state(self) -> dict:
        """The environment's state (episode_id, step_count, and whatever the environment adds)."""
        return await self._exchange({"type": "state"}, "state")

    async def close(self) -> None:
        """Say goodbye and close the socket; safe to call twice and after the server died."""
        if self._closed:
            return
        self._closed = True
        ws, self._ws = self._ws, None
        try:
            if ws is not None and self._dropped is None:
                try:
                    async with asyncio.timeout(min(self.timeout, 5.0)):
                        await ws.send('{"type":"close"}')
                        await ws.close()
                except (TimeoutError, ConnectionClosed, OSError):
                    ws.transport.abort()
        finally:
            self._release_gate()

    # ---- internals --------------------------------------------------------------------------------
    def _check_usable(self) -> None:
        if self._closed:
            raise ConnectionDroppedError("this EpisodeSession is closed", url=self.url, hint="open a new EpisodeSession")
        if self._dropped is not None:
            raise ConnectionDroppedError(self._dropped, url=self.url, hint="its socket was dropped; open a new EpisodeSession and rerun the episode")

    async def _open(self) -> None:
        for attempt in range(_CONNECT_ATTEMPTS):
            try:
                async with asyncio.timeout(self.timeout):
                    self._ws = await connect(
                        self.url,
                        proxy=_proxy_for(self.url),
                        open_timeout=None,
                        close_timeout=2.0,
                        max_size=_MAX_FRAME_BYTES,
                        compression=None,
                    )
                self._fresh = True
                return
            except TimeoutError:
                raise OpenEnvTimeoutError(
                    f"the WebSocket handshake took longer than {self.timeout:g}s", url=self.url, hint="the server is overloaded or stuck"
                ) from None
            except InvalidStatus as exc:
                raise ServerError(
                    f"the server refused the WebSocket upgrade with HTTP {exc.response.status_code}",
                    url=self.url,
                    hint="is base_url an OpenEnv server (it serves episodes at /ws)?",
                ) from None
            except (OSError, InvalidHandshake) as exc:
                if attempt == _CONNECT_ATTEMPTS - 1:
                    raise ServerUnreachableError(
                        f"cannot open the episode socket after {_CONNECT_ATTEMPTS} attempts ({type(exc).__name__}: {exc})",
                        url=self.url,
                        hint="start the server (e.g. `openenv-prime serve chain-sum`) or fix base_url",
                    ) from None
                await asyncio.sleep(backoff(attempt, base=0.1))

    async def _exchange(self, message: dict, expect: str) -> Any:
        self._check_usable()
        async with self._busy:  # one message in flight per socket, or replies would cross
            self._check_usable()
            if self._ws is None:
                await self.connect()
            capacity_deadline: float | None = None
            while True:
                fresh = self._fresh
                frame = await self._send_receive(message)
                self._fresh = False
                error = frame.get("data") if frame.get("type") == "error" else None
                if fresh and isinstance(error, dict) and error.get("code") == "CAPACITY_REACHED":
                    loop = asyncio.get_running_loop()
                    if capacity_deadline is None:
                        capacity_deadline = loop.time() + self.capacity_wait
                    await self._wait_out_capacity(error, capacity_deadline - loop.time())
                    continue
                return self._parse(frame, message["type"], expect)

    async def _wait_out_capacity(self, error: dict, time_left: float) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            ws.transport.abort()
        delay = backoff(self.capacity_retries)
        if delay > time_left:
            self._release_gate()
            self._dropped = "the server refused the session: it is at its session limit"
            raise CapacityError(
                f"the server stayed at its session limit ({error.get('active_sessions')}/{error.get('max_sessions')} sessions) "
                f"for {self.capacity_wait:g}s",
                url=self.url,
                hint="raise the server's --max-sessions, pass max_sessions=<its limit> so sessions queue in this process, or raise capacity_wait",
            )
        self.capacity_retries += 1
        await asyncio.sleep(delay)
        await self._open()

    async def _send_receive(self, message: dict) -> dict:
        ws = self._ws
        kind = message["type"]
        try:
            async with asyncio.timeout(self.timeout):
                try:
                    await ws.send(json.dumps(message))
                except ConnectionClosed:
                    if not self._fresh:  # a fresh socket may have been refused: its CAPACITY_REACHED frame is buffered
                        raise
                raw = await ws.recv()
        except TimeoutError:
            self._drop(f"no answer to {kind!r} within {self.timeout:g}s")
            raise OpenEnvTimeoutError(
                f"no answer to {kind!r} within {self.timeout:g}s; the socket was dropped",
                url=self.url,
                hint="the server is stuck or overloaded; open a new EpisodeSession (or raise timeout=)",
            ) from None
        except ConnectionClosed as exc:
            code = exc.rcvd.code if exc.rcvd is not None else None
            reason = (exc.rcvd.reason if exc.rcvd is not None else "") or "no close frame"
            self._drop(f"the server closed the episode socket during {kind!r}")
            dropped = ConnectionDroppedError(
                f"the server closed the episode socket during {kind!r} (close code {code}: {reason})",
                url=self.url,
                hint="the server stopped or dropped the session; open a new EpisodeSession and rerun the episode",
            )
            dropped.close_code = code
            raise dropped from None
        except BaseException:  # cancelled mid-exchange: the reply may still come, so the socket is out of step
            self._drop(f"{kind!r} was cancelled before its answer arrived")
            raise
        return self._decode(raw, kind)

    def _decode(self, raw: str | bytes, kind: str) -> dict:
        if isinstance(raw, bytes):
            raise self._malformed(kind, f"a binary frame {raw[:200]!r}")
        try:
            frame = json.loads(raw)
        except ValueError:
            raise self._malformed(kind, f"a frame that is not JSON: {raw[:200]!r}") from None
        if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
            raise self._malformed(kind, f"JSON without a 'type': {raw[:200]!r}")
        return frame

    def _parse(self, frame: dict, kind: str, expect: str) -> Any:
        data = frame.get("data")
        if frame["type"] == "error":
            data = data if isinstance(data, dict) else {}
            code, text = data.get("code"), data.get("message", "")
            if code in _CLIENT_ERROR_CODES:
                raise InvalidRequestError(
                    f"the server rejected {kind!r} ({code}: {text})", errors=data.get("errors"), url=self.url, hint="fix the named fields; the session is still usable"
                )
            if code == "CAPACITY_REACHED":
                raise CapacityError(f"the server is at its session limit ({text})", url=self.url, hint="raise the server's --max-sessions")
            message = f"{kind!r} failed on the server ({code}: {text})"
            if code == "EXECUTION_ERROR":  # the environment raised; openenv keeps the session open
                raise ExecutionError(message, detail=str(text), url=self.url,
                                     hint="the environment raised while running it; see the server's log")
            raise ServerError(
                message, url=self.url,
                hint="the environment raised while running it, so its state is unknown: reset before using this "
                     "session again, and see the server's log")
        if frame["type"] != expect or not isinstance(data, dict):
            raise self._malformed(kind, f"a {frame['type']!r} frame where a {expect!r} frame with a data object was due")
        if expect == "state":
            return data
        observation, reward, done = data.get("observation"), data.get("reward"), data.get("done", False)
        if not isinstance(observation, dict) or not isinstance(done, bool):
            raise self._malformed(kind, f"an observation frame without an observation object and a boolean done: {str(data)[:200]}")
        if reward is not None and (isinstance(reward, bool) or not isinstance(reward, (int, float))):
            raise self._malformed(kind, f"a non-numeric reward {reward!r}")
        metadata = data.get("metadata")
        return StepResult(observation, None if reward is None else float(reward), done, metadata if isinstance(metadata, dict) else {})

    def _malformed(self, kind: str, what: str) -> OpenEnvError:
        self._drop(f"the server answered {kind!r} with a malformed frame")
        return ServerError(
            f"the server answered {kind!r} with {what}", url=self.url, hint="the socket was dropped; is base_url an OpenEnv server of openenv 0.4.1 - 0.10.0?"
        )

    def _drop(self, reason: str) -> None:
        self._dropped = reason
        ws, self._ws = self._ws, None
        if ws is not None:
            ws.transport.abort()
        self._release_gate()

    def _release_gate(self) -> None:
        gate, self._gate = self._gate, None
        if gate is not None:
            gate.release()
