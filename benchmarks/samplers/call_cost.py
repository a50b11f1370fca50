"""Per-call cost of one `sample(1)` + one `update` pair, for every sampler, as the key count grows.

Beside each sampler: a bare loop (the same calls into no-op methods, the floor any Python sampler pays)
and a naive weighted draw (`random.choices` over all K weights, what an O(K) sampler pays per draw).
Run: .venv/bin/python -m benchmarks.samplers.call_cost [--pairs 20000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from openenv_prime.samplers import CurriculumSampler, SequentialSampler, Task, UniformSampler

SIZES = (  # (label, number of keys, tasks per key)
    ("K=10", 10, 1),
    ("K=1,000", 1_000, 1),
    ("K=100,000", 100_000, 1),
    ("100,000 tasks / 10 keys", 10, 10_000),
)
SAMPLERS = {
    "sequential": lambda tasks: SequentialSampler(tasks),
    "uniform (tasks)": lambda tasks: UniformSampler(tasks, over="tasks"),
    "uniform (keys)": lambda tasks: UniformSampler(tasks, over="keys"),
    "curriculum (frontier, the default)": lambda tasks: CurriculumSampler(tasks, group_size=8),
    "curriculum (calibrated, before)": lambda tasks: CurriculumSampler(tasks, group_size=8, signal="calibrated"),
    "curriculum (headroom)": lambda tasks: CurriculumSampler(tasks, group_size=8, signal="headroom"),
    "curriculum (binary, RFC)": lambda tasks: CurriculumSampler(tasks, group_size=8, signal="binary"),
    "curriculum (variance)": lambda tasks: CurriculumSampler(tasks, group_size=8, signal="variance"),
}


class _Bare:
    """No-op methods with the sampler's signatures: the loop and call overhead alone."""

    def __init__(self, tasks):
        self.task = tasks[0]

    def sample(self, n):
        return [self.task]

    def update(self, task, rewards, costs=None):
        pass


class _NaiveWeighted(_Bare):
    """A weighted draw that scans all K weights per call, as samplers without a sum tree do."""

    def __init__(self, tasks):
        super().__init__(tasks)
        self.keys = sorted({t.key for t in tasks})
        self.weights = [1.0] * len(self.keys)

    def sample(self, n):
        random.choices(self.keys, self.weights, k=n)
        return [self.task]


def make_tasks(keys: int, per_key: int) -> list[Task]:
    return [Task("train", k * per_key + i, str(k), None) for k in range(keys) for i in range(per_key)]


def time_pairs(sampler, pairs: int, groups: list[list[float]], costs: list[float]) -> float:
    """CPU seconds per sample(1)+update pair over ``pairs`` pairs; the group is reported as its task, as
    the trainers report it (the default curriculum then keeps evidence per task).

    CPU time of this process, not wall time: on a shared machine the wall clock also counts the time
    other processes hold the cores, which says nothing about the sampler."""
    sample, update = sampler.sample, sampler.update
    n_groups = len(groups)
    start = time.process_time()
    for i in range(pairs):
        task = sample(1)[0]
        update(task, groups[i % n_groups], costs)
    return (time.process_time() - start) / pairs


def run(pairs: int, repeats: int, seed: int = 0) -> list[tuple[str, str, float]]:
    rng = random.Random(seed)
    groups = [[float(rng.random() < 0.4) for _ in range(8)] for _ in range(997)]
    costs = [100.0] * 8
    rows = []
    for label, keys, per_key in SIZES:
        tasks = make_tasks(keys, per_key)
        contenders = dict(SAMPLERS, **{"bare loop (no-op)": _Bare, "naive O(K) weighted draw": _NaiveWeighted})
        for name, make in contenders.items():
            sampler = make(tasks)
            # The O(K) peer gets fewer pairs at large K (its cost per pair is plain after a few hundred).
            n = max(200, min(pairs, 20 * pairs // keys)) if make is _NaiveWeighted else pairs
            time_pairs(sampler, min(n, 2000), groups, costs)  # warm up
            best = statistics.median(time_pairs(sampler, n, groups, costs) for _ in range(repeats))
            rows.append((label, name, best))
    return rows


def print_table(rows, pairs, repeats) -> None:
    sizes = [label for label, *_ in SIZES]
    names = list(dict.fromkeys(name for _, name, _ in rows))
    cell = {(label, name): t for label, name, t in rows}
    title = f"sample(1) + update, CPU microseconds per pair (median of {repeats} runs of {pairs:,} pairs)"
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # plain text when rich is absent
        print(title)
        print(f"{'sampler':28}" + "".join(f"{s:>26}" for s in sizes))
        for name in names:
            print(f"{name:28}" + "".join(f"{cell[(s, name)] * 1e6:>26.2f}" for s in sizes))
        return
    table = Table(title=title)
    table.add_column("sampler")
    for s in sizes:
        table.add_column(s, justify="right")
    for name in names:
        table.add_row(name, *(f"{cell[(s, name)] * 1e6:.2f}" for s in sizes))
    Console(width=160).print(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20000, help="pairs per timed run")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per cell (the median is shown)")
    args = parser.parse_args(argv)
    print_table(run(args.pairs, args.repeats), args.pairs, args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
