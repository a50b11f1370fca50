"""Where a curriculum's history forked from shared states, so merges can tell shared history apart.

Workers that start from one shared state must each ``reseed`` (else they all draw the same tasks);
``CurriculumSampler.reseed`` appends the digest of the state loaded last (the last ``LINEAGE_LIMIT``
are kept). Workers started from one state therefore all carry its digest, and ``merge_state_dicts``
refuses to count that state once per worker: it must be passed as ``base``. Loading alone records
nothing, so a resumed checkpoint's ``state_dict()`` is exactly the one saved.
"""

from __future__ import annotations

from typing import Any

LINEAGE_LIMIT = 32
_DIGEST_CHARS = 16


def history_digest(columns: dict[str, list], rng: dict[str, Any], lineage: list[str]) -> str:
    """A digest of a state's statistics (``columns``: field name -> per-key list, as parsed), RNG and lineage."""
    import hashlib  # here, not at module level: it loads OpenSSL (see pool.py)
    import json

    text = json.dumps([columns, rng, lineage], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:_DIGEST_CHARS]


def extended(lineage: list[str], digest: str) -> list[str]:
    return (lineage + [digest])[-LINEAGE_LIMIT:]


def parse_lineage(value: Any, name: str = "lineage") -> list[str]:
    if not isinstance(value, list) or len(value) > LINEAGE_LIMIT:
        raise ValueError(f"state_dict field {name} must be a list of at most {LINEAGE_LIMIT} digests")
    for item in value:
        if not (isinstance(item, str) and len(item) == _DIGEST_CHARS and all(c in "0123456789abcdef" for c in item)):
            raise ValueError(f"state_dict field {name} holds {item!r}, not a {_DIGEST_CHARS}-character hex digest")
    return list(value)
