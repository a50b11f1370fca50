"""Binary reward from reasoning-gym's own `score_answer`, the raw score kept beside it.

`score_answer` gives partial credit: a reply that merely contains the oracle ("The answer is 184", or
the wrong "1840") scores between 0 and 1. The reward counts a reply as right only when reasoning-gym
scores one of its readings exactly 1.0: the reply stripped, the text of an ``<answer>...</answer>`` tag
(reasoning-gym's own answer format), or, when the oracle is a number, the reply's final number (as
chain_sum does). The raw score is reasoning-gym's score of the whole reply.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Callable

from openenv_prime.envs.chain_sum.scoring import extract_final_number

_NUMBER = re.compile(r"[-+]?[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?")


@lru_cache(maxsize=None)
def score_answer_fn(dataset: str) -> Callable[[str | None, dict[str, Any]], float]:
    from reasoning_gym import get_score_answer_fn

    return get_score_answer_fn(dataset)  # builds a dataset per call: keep one per name


def readings(reply: str, oracle: str) -> list[str]:
    """The candidate answers in a reply, most literal first."""
    from reasoning_gym.utils import extract_answer

    found = [reply.strip()]
    tagged = extract_answer(reply or "")
    if tagged is not None:
        found.append(tagged.strip())
    if _NUMBER.fullmatch(str(oracle).strip()):
        number = extract_final_number(reply)
        if number is not None:
            found.append(number)
    return list(dict.fromkeys(found))


def score_reply(dataset: str, reply: str, entry: dict[str, Any]) -> tuple[float, float, str | None]:
    """(reward in {0.0, 1.0}, reasoning-gym's raw score of the whole reply, the reading that scored 1.0 or None)."""
    score_answer = score_answer_fn(dataset)
    raw = float(score_answer(reply, entry))
    for reading in readings(reply, entry["answer"]):
        if float(score_answer(reading, entry)) == 1.0:
            return 1.0, raw, reading
    return 0.0, raw, None
