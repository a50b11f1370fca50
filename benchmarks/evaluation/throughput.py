"""Episodes per second of `run_eval` beside a bare `/ws` loop on the same tasks, in one run.

The bare loop is the least an eval can do: each worker keeps one socket and, per episode, resets the
task and steps the answer. `run_eval` adds task listing and choice, prompt rendering, the policy call and scoring. Both use
the embedded chain_sum server (5 tiers) and an in-process policy that answers from the question; the last
rows put the scripted OpenAI-compatible server behind `OpenAIPolicy` to add the HTTP model hop.

    .venv/bin/python -m benchmarks.evaluation.throughput [--per-family 40] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from rich.console import Console
from rich.table import Table

from openenv_prime.client import EpisodeSession, TaskAPIClient, load_sampler_tasks
from openenv_prime.envs.launch import local_server
from openenv_prime.evaluation import EvalConfig, OpenAIPolicy, choose_tasks, run_eval
from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer, chain_sum_rule, chain_sum_terms


def answer(question: str) -> str:
    return str(sum(chain_sum_terms(question)))


class InProcessPolicy:
    async def complete(self, prompts):
        return [answer(p[-1]["content"]) for p in prompts]


async def bare_loop(base_url: str, tasks, concurrency: int) -> int:
    solved = 0
    queue = list(tasks)

    async def worker():
        nonlocal solved
        async with EpisodeSession(base_url) as session:
            while queue:
                task = queue.pop()
                first = await session.reset(split=task.split, index=task.index)
                result = await session.step({"answer": answer(first.observation["question"])})
                solved += result.reward == 1.0

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return solved


def best_of(repeats: int, fn) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-family", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    table = Table(title=f"eval throughput, chain_sum 5 tiers x {args.per_family} tasks (median of {args.repeats})")
    for column in ("path", "concurrency", "episodes", "seconds", "episodes/s", "vs bare loop", "accuracy"):
        table.add_column(column, justify="right" if column not in ("path",) else "left")

    with local_server("chain-sum", tiers=5, max_sessions=64) as base_url, \
            ScriptedOpenAIServer(chain_sum_rule(correct_tiers=range(5))) as model_url:
        with TaskAPIClient(base_url) as api:
            listing_s, all_tasks = best_of(args.repeats, lambda: load_sampler_tasks(api, "test"))
        tasks = choose_tasks(all_tasks, args.per_family, seed=0)
        n = len(tasks)
        table.add_row("task listing (whole test split)", "-", str(len(all_tasks)), f"{listing_s:.3f}", "-", "-", "-")
        for concurrency in (1, 8, 32):
            bare_s, solved = best_of(args.repeats, lambda: asyncio.run(bare_loop(base_url, tasks, concurrency)))
            table.add_row("bare /ws loop", str(concurrency), str(n), f"{bare_s:.3f}", f"{n / bare_s:.0f}", "1.00x",
                          f"{solved / n:.2f}")
            config = EvalConfig(base_url=base_url, per_family=args.per_family, max_concurrency=concurrency)
            for label, policy in (("run_eval, in-process policy", InProcessPolicy()),
                                  ("run_eval, OpenAIPolicy -> scripted server",
                                   OpenAIPolicy(model_url, "scripted", max_concurrency=concurrency))):
                eval_s, result = best_of(args.repeats, lambda: run_eval(config, policy))
                table.add_row(label, str(concurrency), str(n), f"{eval_s:.3f}", f"{n / eval_s:.0f}",
                              f"{(n / eval_s) / (n / bare_s):.2f}x", f"{result.accuracy:.2f}")
            table.add_section()
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
