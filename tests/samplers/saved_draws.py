"""The draws every curriculum signal mode makes on one fixed scenario, saved before the modes' rules moved into
`samplers/signals.py`, so a test can show that the same seed still gives the same draws and the same state.

    .venv/bin/python -m tests.samplers.saved_draws     # rewrites tests/samplers/data/curriculum_draws.json

Run it to refresh the file only when a rule is meant to change its draws, and say so in the commit.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from openenv_prime.samplers import CurriculumSampler, Task
from openenv_prime.samplers.curriculum import SIGNAL_MODES

SAVED = Path(__file__).with_name("data") / "curriculum_draws.json"
SKILL = {"0": 0.95, "1": 0.7, "2": 0.4, "3": 0.1, "4": 0.0, "5": 0.55}  # each key's success rate


def scenario(mode: str, seed: int) -> dict:
    """60 tasks in 6 keys of different difficulty, 40 rounds of 3 draws with groups of 4: the draws, and a digest of
    the final state (RNG, counts, estimates)."""
    tasks = [Task("train", i, key=str(i % 6)) for i in range(60)]
    sampler = CurriculumSampler(tasks, group_size=4, signal=mode, seed=seed)
    outcomes = random.Random(1000 + seed)
    draws = []
    for _ in range(40):
        for task in sampler.sample(3):
            draws.append(task.index)
            p = SKILL[task.key]
            if mode == "variance":  # graded rewards: partial credit around the skill
                rewards = [round(min(1.0, max(0.0, p + outcomes.uniform(-0.3, 0.3))), 2) for _ in range(4)]
            else:
                rewards = [float(outcomes.random() < p) for _ in range(4)]
            sampler.update(task, rewards, costs=[10.0] * 4)
    state = json.dumps(sampler.state_dict(), sort_keys=True)
    return {"draws": draws, "state_sha256": hashlib.sha256(state.encode()).hexdigest()}


def all_modes() -> dict:
    return {mode: {str(seed): scenario(mode, seed) for seed in (0, 1)} for mode in SIGNAL_MODES}


if __name__ == "__main__":
    SAVED.write_text(json.dumps(all_modes()) + "\n")
    print(f"wrote {SAVED}")
