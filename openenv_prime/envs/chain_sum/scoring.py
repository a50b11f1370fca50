"""Binary reward for chain_sum replies.

reasoning-gym's `score_answer` gives partial credit (len(oracle)/len(answer)) whenever the oracle is a
substring of the answer, so the wrong answer "-240" scores 0.75 against "-24", while a right answer in a
sentence ("The answer is 169") scores far below 1. We extract the reply's final number and count the
reply as correct only when reasoning-gym scores that number exactly 1.0.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

# A number not glued to a word, a dot or another sign ("1-24" has no number "-24"; "x=-24" does).
_NUMBER = re.compile(r"(?<![\w.+\-])[-+]?[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?(?![0-9])")


def extract_final_number(reply: str) -> str | None:
    """The last number in the reply, or None if it has none."""
    matches = _NUMBER.findall(reply or "")
    return matches[-1] if matches else None


@lru_cache(maxsize=1)
def _score_answer():
    from reasoning_gym import get_score_answer_fn

    return get_score_answer_fn("chain_sum")  # builds a dataset each call: keep one


def score_reply(reply: str, entry: dict[str, Any]) -> tuple[float, float, str | None]:
    """(reward in {0.0, 1.0}, reasoning-gym's raw score of the whole reply, the extracted number)."""
    score_answer = _score_answer()
    raw = float(score_answer(reply, entry))
    extracted = extract_final_number(reply)
    reward = 1.0 if extracted is not None and float(score_answer(extracted, entry)) == 1.0 else 0.0
    return reward, raw, extracted
