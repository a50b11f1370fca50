"""The one retry delay of the package: capped exponential backoff with jitter.

Every retry here (a Task API request, a WebSocket connect, waiting out a server at its session limit, a busy
model endpoint) waits ``backoff(attempt)``: the delay doubles per attempt up to ``cap``, and a random factor
in [0.5, 1) keeps many clients that failed together from retrying together.
"""

from __future__ import annotations

import random


def backoff(attempt: int, *, base: float = 0.05, cap: float = 1.0) -> float:
    """Seconds to wait before retry ``attempt + 1``: ``min(cap, base * 2**attempt)`` times a jitter in [0.5, 1)."""
    return min(cap, base * 2 ** min(attempt, 30)) * random.uniform(0.5, 1.0)
