"""Per-call cost of a prime-rl curriculum sampler: `__next__` + `observe` of one finalized group.

The openenv-prime adapter (curriculum over 10 tier families, and over one family per task)
beside prime-rl's own `DifficultyPoolSampler` and `StandardSampler`, at 1,000, 10,000 and
100,000 tasks, in one run. Tasks are the openenv-prime taskset's own `OpenEnvTask`s; groups are
real verifiers Episodes of 8 traces, built outside the timed region.

    P=/path/to/patched/prime-rl
    PYTHONPATH=.:$P/src:$P/packages/prime-rl-configs/src .venv-primerl/bin/python -m benchmarks.prime_rl_adapter.call_cost

Needs a prime-rl checkout with patches/prime-rl-custom-sampler.patch applied (for the adapter's
base class only; the patch does not touch the samplers timed here), on PYTHONPATH as patches/check puts it.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import statistics
import time


def make_tasks(n: int, families: int = 10) -> list:
    from openenv_prime.verifiers_taskset.config import OpenEnvTaskConfig
    from openenv_prime.verifiers_taskset.taskset import OpenEnvTask, OpenEnvTaskData

    config = OpenEnvTaskConfig()
    tasks = []
    for i in range(n):
        tier = i % families
        ident = f"chain_sum/train/t{tier}/{i // families}"
        data = OpenEnvTaskData(
            idx=i, id=ident, name=ident, prompt=None, env_name="chain_sum", split="train", index=i,
            spec={"id": ident, "tier": tier}, family=str(tier),
        )
        tasks.append(OpenEnvTask(data, config))
    return tasks


def make_group(task, rng: random.Random, size: int = 8) -> list:
    import verifiers.v1 as vf

    traces = [
        vf.Trace(
            task=vf.TraceTask(type="OpenEnvTask", data=task.data, key=task.key, hash="h"),
            agent=vf.AgentInfo(config=vf.AgentConfig()),
            nodes=[
                vf.MessageNode(message=vf.UserMessage(content="q")),
                vf.MessageNode(
                    message=vf.AssistantMessage(content="a"), parent=0, sampled=True,
                    token_ids=[1, 2], mask=[True, True], logprobs=[0.0, 0.0],
                ),
            ],
            calls=[vf.ModelCall(node=1, usage=vf.Usage(prompt_tokens=40, completion_tokens=rng.randint(5, 50)))],
            rewards={"openenv_return": vf.Reward(score=float(rng.random() < 0.5))},
            ok=True,
        )
        for _ in range(size)
    ]
    return [
        vf.Episode(env=vf.EnvInfo(id="openenv-prime", name="chain-sum"), task=t.task, group=vf.GroupInfo(id="g"), traces=[t])
        for t in traces
    ]


def measure(sampler, calls: int, seed: int = 0) -> tuple[float, float]:
    """Median microseconds of `next(sampler)` and of `sampler.observe(group)`: the median keeps
    what a call costs when another process takes the core for a moment (2 shared cores here)."""
    rng = random.Random(seed)
    spent_next, spent_observe = [], []
    for _ in range(calls):
        start = time.perf_counter()
        task = next(sampler)
        spent_next.append(time.perf_counter() - start)
        group = make_group(task, rng)
        start = time.perf_counter()
        sampler.observe(group)
        spent_observe.append(time.perf_counter() - start)
    return statistics.median(spent_next) * 1e6, statistics.median(spent_observe) * 1e6


def checkpoint_cost(sampler) -> tuple[float, float, float]:
    """What prime-rl does with the sampler once per step (`metrics`) and per checkpoint
    (`state_dict`, pickled by torch.save on the event loop): ms of metrics(), ms of state_dict()
    + pickle, and the pickled KB."""
    import pickle

    start = time.perf_counter()
    sampler.metrics()
    metrics_ms = (time.perf_counter() - start) * 1e3
    start = time.perf_counter()
    payload = pickle.dumps(sampler.state_dict())
    save_ms = (time.perf_counter() - start) * 1e3
    return metrics_ms, save_ms, len(payload) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--calls", type=int, default=400, help="next+observe pairs per row")
    args = parser.parse_args()
    if importlib.util.find_spec("prime_rl") is None:
        parser.error("prime_rl does not import: put a patched prime-rl checkout P on PYTHONPATH, "
                     "PYTHONPATH=.:P/src:P/packages/prime-rl-configs/src")

    from prime_rl.configs.orchestrator import DifficultyPoolSamplerConfig
    from prime_rl.orchestrator.curriculum import DifficultyPoolSampler, StandardSampler
    from rich.console import Console
    from rich.table import Table

    from openenv_prime.prime_rl_adapter import OpenEnvPrimeSampler

    table = Table(title=f"prime-rl sampler cost per group: next + observe (G=8, median of {args.calls} calls)")
    for column in ("tasks", "sampler", "next µs", "observe µs", "next+observe µs", "difficulty_pool ÷ this",
                   "metrics ms", "state ms", "state KB"):
        table.add_column(column, justify="right" if column != "sampler" else "left", no_wrap=True)
    for n in args.sizes:
        tasks = make_tasks(n)
        contenders = {
            "prime-rl difficulty_pool (per task)": lambda: DifficultyPoolSampler(DifficultyPoolSamplerConfig(), tasks),
            "prime-rl standard (cycle, no feedback)": lambda: StandardSampler(tasks),
            "openenv-prime curriculum, 10 tier families": lambda: OpenEnvPrimeSampler(
                tasks, sampler="curriculum", sampler_kwargs={"group_size": 8}
            ),
            "openenv-prime curriculum, family per task": lambda: OpenEnvPrimeSampler(
                tasks, sampler="curriculum", family_field="", sampler_kwargs={"group_size": 8}
            ),
        }
        rows = {}
        for name, build in contenders.items():
            sampler = build()
            rows[name] = (*measure(sampler, args.calls), *checkpoint_cost(sampler))
        pool = sum(rows["prime-rl difficulty_pool (per task)"][:2])
        for name, (next_us, observe_us, metrics_ms, save_ms, state_kb) in rows.items():
            pair = next_us + observe_us
            table.add_row(
                f"{n:,}", name, f"{next_us:,.1f}", f"{observe_us:,.1f}", f"{pair:,.1f}", f"{pool / pair:,.1f}x",
                f"{metrics_ms:,.2f}", f"{save_ms:,.1f}", f"{state_kb:,.1f}",
            )
        table.add_section()
    Console(width=170).print(table)


if __name__ == "__main__":
    main()
