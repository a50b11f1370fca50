"""What the chain_sum server answers, as plain JSON: task specs, reset observations, the scores of fixed replies,
picks by seed, splits, metadata and the wire classes' schemas, for a fixed choice of tasks of every split and schedule.

`tests/envs/fixtures/chain_sum_record.json.gz` holds this record as the chain_sum server of main 76e4bd1 (its own
package, before it became a case of the reasoning-gym tiers server) answered it; `test_chain_sum_record.py` checks
that today's server answers exactly the same. Rewrite the fixture only on purpose:
``python -m tests.envs.chain_sum_record tests/envs/fixtures/chain_sum_record.json.gz``.
"""

from __future__ import annotations

import gzip
import json
import random
import sys
from typing import Any

from openenv_prime.envs.reasoning_gym_tiers.environment import (
    ChainSumAction,
    ChainSumEnvironment,
    ChainSumObservation,
    ChainSumState,
)

TIERS_PER_SCHEDULE = {"lockstep": 5, "interleaved": 10}  # the server's default tier counts
TASKS_PER_SPLIT = 150
SEEDS = range(12)


def replies(answer: str) -> list[str]:
    """Replies that tell the scoring rules apart: exact, in a sentence, partial credit, off by one, a tagged answer
    followed by another number (reasoning-gym's own reading would take the tag), the sign flipped, thousands commas."""
    n = int(answer)
    return [answer, f"The answer is {answer}.", answer + "0", str(n + 1), f"<answer>{answer}</answer> or {n + 7}",
            str(-n), f"{n:,}", ""]


def chosen_indices(env: ChainSumEnvironment, schedule: str, split: str) -> list[int]:
    """The first, second and last task of every tier, the rest drawn at random (seeded) from the whole split."""
    per_tier = env.taskset.per_tier[split]
    tiers = env.num_tasks(split) // per_tier
    fixed = sorted({t * per_tier + local for t in range(tiers) for local in (0, 1, per_tier - 1)})
    rng = random.Random(f"{schedule}/{split}")
    rest = rng.sample([i for i in range(per_tier * tiers) if i not in set(fixed)], TASKS_PER_SPLIT - len(fixed))
    return sorted(fixed + rest)


def task_record(env: ChainSumEnvironment, split: str, index: int) -> dict[str, Any]:
    observation = env.reset(split=split, index=index, episode_id="record")
    record = {"reset": observation.model_dump(mode="json"), "state": env.state.model_dump(mode="json"), "steps": []}
    answer = env.taskset.entry(split, index)["answer"]
    for reply in replies(answer):
        env.reset(split=split, index=index)
        step = env.step(ChainSumAction(answer=reply))
        record["steps"].append([reply, step.reward, step.score, step.correct, step.extracted_answer, step.correct_answer])
    return record


def record() -> dict[str, Any]:
    out: dict[str, Any] = {
        "schemas": {cls.__name__: cls.model_json_schema() for cls in (ChainSumAction, ChainSumObservation, ChainSumState)},
        "schedules": {},
    }
    for schedule, tiers in TIERS_PER_SCHEDULE.items():
        env = ChainSumEnvironment(tiers, schedule)
        section: dict[str, Any] = {
            "splits": env.list_splits(),
            "metadata": env.get_metadata().model_dump(mode="json"),
            "tasks": {},
            "picks": {},
        }
        for split in ("train", "test"):
            section["tasks"][split] = {str(i): task_record(env, split, i) for i in chosen_indices(env, schedule, split)}
            section["picks"][split] = {
                f"{seed}/{tier}": env.reset(seed=seed, split=split, tier=tier).task["id"]
                for seed in SEEDS for tier in (None, *range(tiers))
            }
        out["schedules"][schedule] = section
    return out


def main(path: str) -> None:
    text = json.dumps(record(), sort_keys=True, separators=(",", ":"))
    with open(path, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as packed:  # mtime 0: the same bytes each time
        packed.write(text.encode())


if __name__ == "__main__":
    main(sys.argv[1])
