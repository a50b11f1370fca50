"""Several orchestrators sharing one config must not draw identically.

prime-rl runs one orchestrator per run and gives it no worker index (559b447), so a deployment
that runs several (one per node, say) names each one's index in the kwargs or in the environment.
Worker 0 keeps the configured seed, so a single-worker run draws exactly as before; worker i > 0
gets a seed derived from (seed, i). To pool what the workers learned, merge their checkpoints'
inner states with `openenv_prime.samplers.merge_state_dicts` (see docs/samplers.md) and give each
worker its own stream again with `reseed`."""

from __future__ import annotations

import hashlib
import os

WORKER_INDEX_VAR = "OPENENV_PRIME_WORKER_INDEX"


def worker_index(configured: int | None) -> int:
    """The configured index, else the environment variable's, else 0."""
    if configured is not None:
        return configured
    raw = os.environ.get(WORKER_INDEX_VAR, "").strip()
    if not raw:
        return 0
    if not raw.isdigit():
        raise ValueError(f"{WORKER_INDEX_VAR}={raw!r} must be an int >= 0 (this orchestrator's worker index)")
    return int(raw)


def worker_seed(seed: int, index: int) -> int:
    """`seed` for worker 0; for worker i a 63-bit seed from (seed, i), stable across Python runs."""
    if index == 0:
        return seed
    digest = hashlib.sha256(f"openenv-prime-worker:{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1
