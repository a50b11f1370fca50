"""Groups drawn but not yet observed, with a horizon after which they count as lost.

prime-rl drops stale groups (too far off-policy) and fully cancelled groups in its train sink
without calling the sampler, so "drawn minus observed" would only grow. A drawn group that has not
come back within `horizon` later draws is counted as lost instead. Every operation is amortized O(1)."""

from __future__ import annotations

from collections import deque


class PendingGroups:
    """Outstanding draws per task key, oldest first, expiring `horizon` draws after their own."""

    __slots__ = ("horizon", "by_key", "order", "draws", "outstanding", "lost")

    def __init__(self, horizon: int) -> None:
        self.horizon = horizon
        self.by_key: dict[str, deque[int]] = {}
        self.order: deque[tuple[int, str]] = deque()
        self.draws = 0
        self.outstanding = 0
        self.lost = 0

    def drawn(self, key: str) -> None:
        self.draws += 1
        self.by_key.setdefault(key, deque()).append(self.draws)
        self.order.append((self.draws, key))
        self.outstanding += 1
        self._expire()

    def observed(self, key: str) -> bool:
        """Settle the oldest outstanding draw of `key`; False if none was outstanding (a group
        drawn before a resume, or one already counted as lost)."""
        waiting = self.by_key.get(key)
        if not waiting:
            return False
        waiting.popleft()
        if not waiting:
            del self.by_key[key]
        self.outstanding -= 1
        return True

    def _expire(self) -> None:
        cutoff = self.draws - self.horizon
        order = self.order
        while order and order[0][0] <= cutoff:
            number, key = order.popleft()
            waiting = self.by_key.get(key)
            if waiting and waiting[0] == number:  # still outstanding: it will not come back
                waiting.popleft()
                if not waiting:
                    del self.by_key[key]
                self.outstanding -= 1
                self.lost += 1
