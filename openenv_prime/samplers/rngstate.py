"""random.Random state as plain JSON data, so a checkpoint continues the exact same draws."""

from __future__ import annotations

import random
from typing import Any


def rng_to_json(rng: random.Random) -> list[Any]:
    version, internal, gauss = rng.getstate()
    return [version, list(internal), gauss]


def rng_from_json(data: Any) -> random.Random:
    try:
        version, internal, gauss = data
        rng = random.Random()
        rng.setstate((int(version), tuple(int(x) for x in internal), gauss))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"state_dict['rng'] is not a saved random.Random state: {exc}") from None
    return rng
