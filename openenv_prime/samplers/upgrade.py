"""Convert a version 1 sampler state to the current version, keeping what can be kept.

Version 1 stored each key's shuffle order in full and the RNG as a list; the current version stores
a seed and a position per key (``cycles.py``) and the RNG compactly (``rngstate.py``). A version 1
key's order mid-cycle has no seed, so the conversion restarts every key's cycle: statistics, counts
and the RNG carry over, the next draws differ from what the version 1 run would have drawn.
"""

from __future__ import annotations

import random
from typing import Any

from openenv_prime.samplers.rngstate import rng_to_json
from openenv_prime.samplers.statecheck import SAMPLER_STATE_VERSION


def upgrade_state_dict(state: dict[str, Any]) -> dict[str, Any]:
    """A new state dict for a version 1 ``state`` (which is not changed); load it as usual."""
    import copy  # only conversion needs it

    if not isinstance(state, dict) or state.get("version") != 1:
        version = state.get("version") if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"upgrade_state_dict converts version 1 states; this one is {version!r}")
    try:
        version, internal, gauss = state["rng"]
        rng = random.Random()
        rng.setstate((int(version), tuple(int(x) for x in internal), gauss))
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"version 1 state field rng is not a saved random.Random state: {exc}") from None
    out = copy.deepcopy(state)
    out["version"] = SAMPLER_STATE_VERSION
    out["rng"] = rng_to_json(rng)
    if "cycles" in out:
        out["cycles"] = []
    if "curriculum" in out:
        out.setdefault("lineage", [])  # version 1 had no shared-history record (lineage.py)
    return out
