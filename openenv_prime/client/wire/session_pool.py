"""Open ``/ws`` sessions kept from wave to wave, as many as asked for or as many as the server admits.

A reset starts a new episode on a socket that is already open, so the eval and the trainer keep their sockets
for the whole run instead of paying a handshake per episode. How many the server admits is found by asking:
openenv refuses a session over its limit (``CAPACITY_REACHED``) with the first answer on the socket, so every
new socket is sent one ``state`` message; the refused ones are closed and no more are opened until the pool is
closed (an environment that cannot run concurrent sessions admits one, and plays its episodes one by one).

The pool handles sockets only; the episode engine starts a wave of episodes on them
(:func:`~openenv_prime.client.engine.episode.start_wave`).
"""

from __future__ import annotations

import asyncio
from typing import Sequence

from openenv_prime.client.wire.errors import CapacityError, ServerError
from openenv_prime.client.wire.session import EpisodeSession


class SessionPool:
    """Sessions to one server, opened on demand and reused until :meth:`close`."""

    def __init__(self, base_url: str, *, timeout: float = 30.0):
        self.base_url = base_url
        self.timeout = timeout
        self._sessions: list[EpisodeSession] = []
        self._full = False  # the server refused a socket: ask for no more until the pool is closed

    def new_session(self) -> EpisodeSession:
        """A fresh session (not yet connected), e.g. to replay an episode whose socket the server dropped."""
        return EpisodeSession(self.base_url, timeout=self.timeout)

    async def open(self, n: int) -> list[EpisodeSession]:
        """Up to ``n`` open sessions: the kept ones first, then new ones while the server admits them.

        Raises the server's refusal when it admits none, and any other failure to open or ask a socket."""
        missing = n - len(self._sessions)
        if missing > 0 and not self._full:
            fresh = [EpisodeSession(self.base_url, timeout=self.timeout, capacity_wait=0) for _ in range(missing)]
            try:
                await asyncio.gather(*(s.connect() for s in fresh))
                probes = await asyncio.gather(*(s.state() for s in fresh), return_exceptions=True)
                failed = [p for p in probes if isinstance(p, BaseException) and not isinstance(p, (CapacityError, ServerError))]
                if failed:
                    raise failed[0]
            except BaseException:
                await asyncio.gather(*(s.close() for s in fresh), return_exceptions=True)
                raise
            refused = [p for p in probes if isinstance(p, CapacityError)]
            await asyncio.gather(*(s.close() for s, p in zip(fresh, probes) if isinstance(p, CapacityError)))
            # ServerError: an environment that cannot report its state before a reset; the socket is usable
            self._sessions += [s for s, p in zip(fresh, probes) if not isinstance(p, CapacityError)]
            self._full = bool(refused)
            if not self._sessions:
                raise refused[0]
        return self._sessions[:n]

    def keep(self, sessions: Sequence[EpisodeSession]) -> None:
        """After a wave played on the first ``len(sessions)`` of :meth:`open`'s sessions: ``sessions`` take their slots
        (an episode replayed on a new socket leaves that socket in its slot)."""
        self._sessions[:len(sessions)] = list(sessions)

    async def close(self) -> None:
        """Close every kept socket (before an eval opens its own, at the end of a run, after a failure)."""
        sessions, self._sessions = self._sessions, []
        self._full = False
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)
