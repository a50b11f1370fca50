"""random.Random state as compact JSON data, so a checkpoint continues the exact same draws.

The Mersenne Twister's 624 32-bit words go as one base64 string (3.3 KB instead of 6.8 KB as a list
of decimal ints): in a small sampler state the RNG is most of the bytes.
"""

from __future__ import annotations

import base64
import binascii
import math
import random
import struct
from typing import Any

_WORDS = struct.Struct("<624I")


def rng_to_json(rng: random.Random) -> dict[str, Any]:
    version, internal, gauss = rng.getstate()
    words, index = internal[:-1], internal[-1]
    return {"mt": base64.b64encode(_WORDS.pack(*words)).decode("ascii"), "index": index, "gauss": gauss}


def rng_from_json(data: Any) -> random.Random:
    """The saved generator, or a ValueError naming the part of ``rng`` that is wrong."""
    if not isinstance(data, dict) or set(data) != {"mt", "index", "gauss"}:
        shown = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"state_dict field rng must be a dict with exactly mt, index and gauss, got {shown}")
    mt, index, gauss = data.get("mt"), data.get("index"), data.get("gauss")
    try:
        words = _WORDS.unpack(base64.b64decode(mt, validate=True)) if isinstance(mt, str) else None
    except (binascii.Error, struct.error, ValueError):
        words = None
    if words is None:
        raise ValueError("state_dict field rng.mt must be the base64 text of 624 32-bit words")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= 624:
        raise ValueError(f"state_dict field rng.index holds {index!r}, not an int in [0, 624]")
    if gauss is not None and (isinstance(gauss, bool) or not isinstance(gauss, (int, float)) or not math.isfinite(gauss)):
        raise ValueError(f"state_dict field rng.gauss holds {gauss!r}, not null or a finite number")
    rng = random.Random()
    rng.setstate((3, (*words, index), None if gauss is None else float(gauss)))
    return rng
