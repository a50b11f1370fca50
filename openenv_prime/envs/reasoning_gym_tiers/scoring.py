"""Binary reward from reasoning-gym's own `score_answer`, the raw score kept beside it.

`score_answer` gives partial credit: a reply that merely contains the oracle ("The answer is 184", or
the wrong "1840") scores between 0 and 1. The reward counts a reply as right only when reasoning-gym
scores a reading of it exactly 1.0. Two rules choose the readings:

* `score_reply` (`serve reasoning-gym`): the reply stripped, the text of an ``<answer>...</answer>`` tag
  (reasoning-gym's own answer format), or, when the oracle is a number, the reply's final number;
  it reports the reading that scored 1.0.
* `score_final_number` (`serve chain-sum`): the reply's final number only, reported right or wrong.

The raw score is reasoning-gym's score of the whole reply.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Callable

# A number not glued to a word, a dot or another sign ("1-24" has no number "-24"; "x=-24" does).
_FINAL_NUMBER = re.compile(r"(?<![\w.+\-])[-+]?[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?(?![0-9])")
_NUMBER = re.compile(r"[-+]?[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?")


def extract_final_number(reply: str) -> str | None:
    """The last number in the reply, or None if it has none."""
    matches = _FINAL_NUMBER.findall(reply or "")
    return matches[-1] if matches else None


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


def score_final_number(dataset: str, reply: str, entry: dict[str, Any]) -> tuple[float, float, str | None]:
    """(reward in {0.0, 1.0}, reasoning-gym's raw score of the whole reply, the reply's final number or None): the
    reward is 1.0 only when reasoning-gym scores that number exactly 1.0."""
    score_answer = score_answer_fn(dataset)
    raw = float(score_answer(reply, entry))
    extracted = extract_final_number(reply)
    reward = 1.0 if extracted is not None and float(score_answer(extracted, entry)) == 1.0 else 0.0
    return reward, raw, extracted
