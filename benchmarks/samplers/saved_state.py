"""Size of a curriculum's saved state, and the time to save and load it, as the pool grows.

Each pool is trained for a while (sample(1) + update pairs, each group reported as its task as the
trainers do), so keys sit in mid-cycle and tasks of keys with several tasks hold evidence of their own.
Beside the state as saved (version 2: per key a seed and a position for its shuffle cycle, the RNG as
base64, per reported task its evidence) is the size version 1 had for the same state (every key's
shuffle order in full, the RNG as a list of ints, no per-task evidence).
Run: .venv/bin/python -m benchmarks.samplers.saved_state [--pairs 20000]
"""

from __future__ import annotations

import argparse
import json
import random
import time

from openenv_prime.samplers import CurriculumSampler, Task

POOLS = (  # (label, tasks, keys)
    ("1,000 tasks / 10 keys", 1_000, 10),
    ("1,000 tasks / 1,000 keys", 1_000, 1_000),
    ("100,000 tasks / 10 keys", 100_000, 10),
    ("100,000 tasks / 1,000 keys", 100_000, 1_000),
    ("100,000 tasks / 100,000 keys", 100_000, 100_000),
)


def version_1_size(sampler: CurriculumSampler, state: dict) -> int:
    """Bytes the same state took in version 1: full per-key orders and positions, the RNG as a list."""
    old = dict(state, version=1)
    version, internal, gauss = sampler._rng.getstate()
    old["rng"] = [version, list(internal), gauss]
    positions = [0] * len(sampler.pool.keys)
    for slot, _, pos in state["cycles"]:
        positions[slot] = pos
    old["cycles"] = {"orders": [list(m) for m in sampler.pool.members], "positions": positions}
    old.pop("lineage")
    old.pop("task_evidence", None)
    return len(json.dumps(old))


def measure(tasks: int, keys: int, pairs: int) -> dict[str, float]:
    pool = [Task("train", i, f"k{i % keys}") for i in range(tasks)]
    sampler = CurriculumSampler(pool, group_size=8)
    rng = random.Random(0)
    for _ in range(pairs):
        task = sampler.sample(1)[0]
        sampler.update(task, [float(rng.random() < 0.4) for _ in range(8)])
    start = time.process_time()
    text = json.dumps(sampler.state_dict())
    saved = time.process_time() - start
    resumed = CurriculumSampler(pool, group_size=8)
    start = time.process_time()
    resumed.load_state_dict(json.loads(text))
    loaded = time.process_time() - start
    state = json.loads(text)
    return {
        "bytes": len(text),
        "cycles_bytes": len(json.dumps(state["cycles"])),
        "rng_bytes": len(json.dumps(state["rng"])),
        "tasks_bytes": len(json.dumps(state.get("task_evidence", []))),
        "v1_bytes": version_1_size(sampler, state),
        "save_s": saved,
        "load_s": loaded,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20000, help="sample+update pairs before saving")
    args = parser.parse_args(argv)
    print(f"curriculum state after {args.pairs:,} sample+update pairs (JSON bytes; CPU ms to save/load)")
    print("| pool | state (v2) | of which cycles | of which RNG | of which task evidence | v1 for the same state "
          "| save ms | load ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, tasks, keys in POOLS:
        m = measure(tasks, keys, args.pairs)
        print(
            f"| {label} | {m['bytes']:,} | {m['cycles_bytes']:,} | {m['rng_bytes']:,} | {m['tasks_bytes']:,} | {m['v1_bytes']:,} "
            f"| {m['save_s'] * 1000:.0f} | {m['load_s'] * 1000:.0f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
