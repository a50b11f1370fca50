"""Episodes per second and success rate of the `openenv-prime` verifiers taskset beside verifiers'
built-in `openenv` taskset, on the same chain_sum server and the same scripted model, in one run.

Both tasksets run inside verifiers exactly as `vf-eval` runs them (one `serving()` per env, one
`run_slot` per episode) with the same in-process chat harness, so the difference is the taskset:
how it talks to the server and how it turns replies into actions. A bare loop (one `/ws` session
and one chat request per episode, no verifiers) shows what the plumbing itself costs.

    .venv/bin/python -m benchmarks.verifiers_taskset.throughput [--episodes 64] [--concurrency 1 64]

The scripted model answers every chain_sum question exactly, so a success rate below 1.0 is the
bridge losing episodes, not the model."""

from __future__ import annotations

import argparse
import asyncio
import time

import httpx
from rich.console import Console
from rich.table import Table

from openenv_prime.client import EpisodeSession, observation_to_text, reply_to_action
from openenv_prime.envs.launch import local_server
from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer, chain_sum_rule

MODEL = "scripted"
HARNESS = {"harness": {"id": "openenv-prime"}, "runtime": {"type": "subprocess"}}


def build_env(taskset: dict):
    from verifiers.v1.utils.loaders import load_environment, resolve_env_config

    return load_environment(resolve_env_config({"taskset": taskset, "player": HARNESS}))


FIRST_ERRORS: dict[str, str] = {}


async def run_verifiers(env, tasks, model_url: str, concurrency: int) -> tuple[float, list[float | None]]:
    """Wall seconds for the episodes, and each episode's reward (None for a failed episode)."""
    import verifiers.v1 as vf

    client = vf.EvalClientConfig(base_url=model_url, api_key_var="OPENENV_PRIME_BENCH_KEY")
    ctx = vf.ModelContext(model=MODEL, client=client, sampling=vf.SamplingConfig())
    gate = asyncio.Semaphore(concurrency)
    async with env.serving():
        started = time.perf_counter()
        episodes = await asyncio.gather(*(env.run_slot(slot, ctx, gate) for t in tasks for slot in env.slots(t)))
        wall = time.perf_counter() - started
    for e in episodes:
        errors = [*e.errors, *(err for t in e.traces for err in t.errors)]
        if errors:
            FIRST_ERRORS.setdefault(env.config.taskset.id, errors[0].message.strip().splitlines()[-1][:300])
    return wall, [e.traces[0].reward if e.ok and e.traces else None for e in episodes]


async def run_bare(openenv_url: str, specs: list[tuple[str, int]], model_url: str, concurrency: int,
                   action_schema: dict) -> tuple[float, list[float | None]]:
    """The same episodes with no verifiers: reset, one chat request, step."""
    gate = asyncio.Semaphore(concurrency)

    async def episode(http: httpx.AsyncClient, split: str, index: int) -> float | None:
        async with gate, EpisodeSession(openenv_url) as session:
            result = await session.reset(split=split, index=index)
            reply = await http.post(f"{model_url}/chat/completions", json={
                "model": MODEL, "messages": [{"role": "user", "content": observation_to_text(result.observation)}]})
            text = reply.json()["choices"][0]["message"]["content"]
            result = await session.step(reply_to_action(text, action_schema))
            return result.reward

    async with httpx.AsyncClient(timeout=60) as http:
        started = time.perf_counter()
        rewards = await asyncio.gather(*(episode(http, s, i) for s, i in specs))
        return time.perf_counter() - started, list(rewards)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 64])
    args = parser.parse_args()

    from openenv_prime.client import TaskAPIClient

    console = Console(width=140)
    with local_server("chain-sum", tiers=5, max_sessions=64) as openenv_url, \
            ScriptedOpenAIServer(chain_sum_rule(range(5))) as model_url:
        with TaskAPIClient(openenv_url) as api:
            count = api.num_tasks("test")
            action_schema = api.schema()["action"]
        stride = max(1, count // args.episodes)
        specs = [("test", i * stride) for i in range(args.episodes)]  # spread over every tier

        ours = build_env({"id": "openenv-prime", "base_url": openenv_url, "splits": ["test"]})
        wanted = {index for _, index in specs}
        ours_tasks = [t for t in ours.taskset if t.data.index in wanted]
        builtin = build_env({"id": "openenv", "base_url": openenv_url,
                             "resets": [{"split": s, "index": i} for s, i in specs]})
        builtin_tasks = list(builtin.taskset)

        table = Table(title=f"chain_sum episodes (test split, {args.episodes} tasks over 5 tiers), scripted model")
        for column in ("runner", "concurrency", "episodes", "wall s", "episodes/s", "success", "failed",
                       "vs bare"):
            table.add_column(column, justify="right" if column not in ("runner",) else "left")
        for concurrency in args.concurrency:
            rows = {
                "bare loop (no verifiers)": asyncio.run(
                    run_bare(openenv_url, specs, model_url, concurrency, action_schema)),
                "openenv-prime taskset": asyncio.run(run_verifiers(ours, ours_tasks, model_url, concurrency)),
                "verifiers built-in openenv": asyncio.run(
                    run_verifiers(builtin, builtin_tasks, model_url, concurrency)),
            }
            bare_rate = len(specs) / rows["bare loop (no verifiers)"][0]
            for name, (wall, rewards) in rows.items():
                rate = len(rewards) / wall
                ok = [r for r in rewards if r is not None]
                success = sum(1 for r in ok if r == 1.0) / len(rewards)
                table.add_row(name, str(concurrency), str(len(rewards)), f"{wall:.2f}", f"{rate:.1f}",
                              f"{success:.2f}", str(len(rewards) - len(ok)), f"{rate / bare_rate:.2f}x")
        console.print(table)
        for taskset_id, message in FIRST_ERRORS.items():
            console.print(f"first error of {taskset_id}: {message}", soft_wrap=True)


if __name__ == "__main__":
    main()
