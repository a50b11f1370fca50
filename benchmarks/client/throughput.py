"""Throughput of the OpenEnv wire client against a real chain_sum server, beside a bare websockets loop.

    .venv/bin/python -m benchmarks.client.throughput            # defaults: concurrency 1, 32, 128; 3 rounds

Episodes: one episode = open a /ws socket, reset(split="test", index=i), step({"answer": ...}), close:
through ``EpisodeSession`` and through a bare ``websockets`` loop that sends the same frames with the same
connection options (and no proxy lookup at all), interleaved in the same run against the same server (best of the rounds, so load from
other processes on the machine hurts both alike); the client's own CPU time per episode shows the
wrapper's overhead even when the machine is busy. A third column plays the same episodes with the reset
arguments taken from a task list (``TaskListSource``, lines ``{"reset": {"split": "test", "index": i}}``)
instead of the Task API source, so the two task paths compare per episode. Task specs: time to page all
50,000 specs of the default train split with ``get_task_range`` (sync and async clients, several page
sizes), beside reading a 50,000-line task list.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table
from websockets.asyncio.client import connect

from openenv_prime.client import (
    AsyncTaskAPIClient,
    EpisodeSession,
    TaskAPIClient,
    TaskAPISource,
    TaskListSource,
    load_sampler_tasks,
    read_task_list,
    ws_endpoint,
)
from openenv_prime.envs.launch import local_server


async def _bare_episode(url: str, index: int) -> float:
    async with connect(url, proxy=None, open_timeout=None, close_timeout=2.0, max_size=2**24, compression=None) as ws:
        await ws.send(json.dumps({"type": "reset", "data": {"split": "test", "index": index}}))
        json.loads(await ws.recv())
        await ws.send(json.dumps({"type": "step", "data": {"answer": "0"}}))
        reward = json.loads(await ws.recv())["data"]["reward"]
        await ws.send('{"type":"close"}')
    return reward


async def _session_episode(url: str, index: int) -> float:
    async with EpisodeSession(url) as session:
        await session.reset(split="test", index=index)
        return (await session.step({"answer": "0"})).reward


def _sourced_episode(source):
    """An EpisodeSession episode whose reset arguments come from ``source`` (a Task API or a task list)."""

    async def episode(url: str, index: int) -> float:
        async with EpisodeSession(url) as session:
            await session.reset(**source.reset_kwargs("test", index))
            return (await session.step({"answer": "0"})).reward

    return episode


def _write_task_list(path: Path, split: str, count: int) -> Path:
    """Lines that reset chain_sum to its own tasks, so both task paths play the same episodes."""
    with path.open("w") as out:
        for index in range(count):
            out.write(json.dumps({"split": split, "id": f"{split}-{index}", "tier": index // (count // 5), "reset": {"split": split, "index": index}}) + "\n")
    return path


async def _rate(episode, url: str, concurrency: int, episodes: int) -> tuple[float, float]:
    """(episodes per second, this process's CPU milliseconds per episode)."""
    counter = iter(range(episodes))

    async def worker():
        for i in counter:
            assert await episode(url, i % 1000) in (0.0, 1.0)

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(concurrency))), 600)
    return episodes / (time.perf_counter() - started), 1000 * (time.process_time() - cpu) / episodes


def bench_episodes(base_url: str, levels: list[int], rounds: int, episodes: int, task_list: Path) -> Table:
    ws_url = ws_endpoint(base_url)
    table = Table(title=f"episodes/s over /ws (connect + reset + step + close), best of {rounds} rounds")
    columns = ("concurrency", "episodes", "bare websockets", "EpisodeSession", "ratio", "target",
               "Task API source", "task list source", "list / API", "client CPU ms/ep: bare", "session", "task list")
    for column in columns:
        table.add_column(column, justify="right")
    with TaskAPIClient(base_url) as api:
        api_episode = _sourced_episode(TaskAPISource(api))
        list_episode = _sourced_episode(TaskListSource(read_task_list(task_list), "chain_sum"))
        for concurrency in levels:
            count = max(episodes, 4 * concurrency)
            bare, ours, via_api, via_list = [], [], [], []
            for _ in range(rounds):
                bare.append(asyncio.run(_rate(_bare_episode, ws_url, concurrency, count)))
                ours.append(asyncio.run(_rate(_session_episode, base_url, concurrency, count)))
                via_api.append(asyncio.run(_rate(api_episode, base_url, concurrency, count)))
                via_list.append(asyncio.run(_rate(list_episode, base_url, concurrency, count)))
            (bare_rate, _), (our_rate, _), (api_rate, _), (list_rate, _) = max(bare), max(ours), max(via_api), max(via_list)
            table.add_row(
                str(concurrency), str(count), f"{bare_rate:,.0f}", f"{our_rate:,.0f}", f"{our_rate / bare_rate:.2f}x", ">= 0.80x",
                f"{api_rate:,.0f}", f"{list_rate:,.0f}", f"{list_rate / api_rate:.2f}x",
                f"{min(c for _, c in bare):.2f}", f"{min(c for _, c in ours):.2f}", f"{min(c for _, c in via_list):.2f}",
            )
    return table


def bench_task_specs(base_url: str, rounds: int, train_list: Path) -> Table:
    table = Table(title=f"load all task specs of the 50,000-task train split, best of {rounds}")
    for column in ("client", "page_size", "requests", "seconds", "specs/s", "client CPU s", "target"):
        table.add_column(column, justify="right")
    cpu: list[float] = []

    def best(fn) -> tuple[float, int]:
        times, cpus, count = [], [], 0
        for _ in range(rounds):
            started, cpu_started = time.perf_counter(), time.process_time()
            count = len(fn())
            times.append(time.perf_counter() - started)
            cpus.append(time.process_time() - cpu_started)
        cpu.append(min(cpus))
        return min(times), count

    for page_size in (256, 1024, 4096):
        with TaskAPIClient(base_url) as api:
            api.num_tasks("train")  # warm: env name, split check, connection
            seconds, count = best(lambda: api.get_task_range("train", page_size=page_size))
        assert count == 50_000
        pages = -(-count // page_size) + 1
        table.add_row("TaskAPIClient", str(page_size), str(pages), f"{seconds:.3f}", f"{count / seconds:,.0f}", f"{cpu[-1]:.3f}", "< 1 s" if page_size == 1024 else "")

    async def load_async() -> list[dict]:
        async with AsyncTaskAPIClient(base_url) as api:
            return await api.get_task_range("train")

    seconds, count = best(lambda: asyncio.run(load_async()))
    table.add_row("AsyncTaskAPIClient (new client)", "1024", str(-(-count // 1024) + 3), f"{seconds:.3f}", f"{count / seconds:,.0f}", f"{cpu[-1]:.3f}", "")
    with TaskAPIClient(base_url) as api:
        seconds, count = best(lambda: load_sampler_tasks(api, "train"))
    table.add_row("load_sampler_tasks -> Task", "1024", "", f"{seconds:.3f}", f"{count / seconds:,.0f}", f"{cpu[-1]:.3f}", "")
    seconds, count = best(lambda: load_sampler_tasks(TaskListSource(read_task_list(train_list), "chain_sum"), "train"))
    assert count == 50_000
    table.add_row("task list file -> Task", "", "0", f"{seconds:.3f}", f"{count / seconds:,.0f}", f"{cpu[-1]:.3f}", "")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 32, 128])
    parser.add_argument("--episodes", type=int, default=400, help="episodes per measurement (at least 4 per worker)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-sessions", type=int, default=256)
    parser.add_argument("--skip-specs", action="store_true", help="only the episodes table")
    args = parser.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory() as tmp, local_server("chain-sum", tiers=5, max_sessions=args.max_sessions) as url:
        console.print(f"chain_sum server at {url} (max_sessions={args.max_sessions})")
        test_list = _write_task_list(Path(tmp) / "test.jsonl", "test", 1000)
        console.print(bench_episodes(url, args.concurrency, args.rounds, args.episodes, test_list))
        if not args.skip_specs:
            console.print(bench_task_specs(url, args.rounds, _write_task_list(Path(tmp) / "train.jsonl", "train", 50_000)))


if __name__ == "__main__":
    main()
