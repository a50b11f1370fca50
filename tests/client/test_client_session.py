"""EpisodeSession over /ws against real chain_sum servers, a server capped at 2 sessions, a killed server,
and hostile servers: right rewards, clear errors, nothing hangs."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest
from client_hostile import LateAnswer, hostile_ws_server

from openenv_prime.client import (
    CapacityError,
    ConnectionDroppedError,
    EpisodeSession,
    InvalidRequestError,
    OpenEnvTimeoutError,
    ServerError,
    ServerUnreachableError,
    StepResult,
)
from openenv_prime.envs.launch import local_server
from openenv_prime.testing.scripted_openai import chain_sum_terms
from tests.support.processes import server_python
from tests.support.waiting import HANG_GUARD_S, until_async


def _run(coro, timeout: float = HANG_GUARD_S):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def _answer(question: str) -> int:
    terms = chain_sum_terms(question)
    assert terms, f"no chain_sum expression in {question!r}"
    return sum(terms)


async def _episode(url: str, index: int, *, right: bool, **session_kwargs) -> tuple[StepResult, StepResult, EpisodeSession]:
    async with EpisodeSession(url, **session_kwargs) as session:
        first = await session.reset(split="test", index=index)
        answer = _answer(first.observation["question"]) + (0 if right else 1)
        last = await session.step({"answer": str(answer)})
    return first, last, session


def test_200_episodes_get_the_right_rewards(any_server):
    async def main():
        gate = asyncio.Semaphore(16)

        async def one(i: int):
            async with gate:
                return await _episode(any_server, index=5 * i, right=i % 3 != 0)

        return await asyncio.gather(*(one(i) for i in range(200)))

    results = _run(main())
    for i, (first, last, _) in enumerate(results):
        assert first.reward is None and first.done is False
        assert first.observation["task"]["index"] == 5 * i
        assert last.done is True
        assert last.reward == (0.0 if i % 3 == 0 else 1.0)
        assert last.observation["correct_answer"] == str(_answer(first.observation["question"]))
    assert {first.observation["task"]["tier"] for first, _, _ in results} == {0, 1, 2, 3, 4}


def test_state_and_step_count(any_server):
    async def main():
        async with EpisodeSession(any_server) as session:
            await session.reset(split="test", index=777, episode_id="ep-777")
            before = await session.state()
            await session.step({"answer": "1"})
            return before, await session.state()

    before, after = _run(main())
    assert before["step_count"] == 0 and before["task_id"] == "chain_sum/test/t3/177" and before["tier"] == 3
    assert after["step_count"] == 1


def test_invalid_action_names_the_field_and_keeps_the_session(any_server):
    async def main():
        async with EpisodeSession(any_server) as session:
            first = await session.reset(split="test", index=42)
            with pytest.raises(InvalidRequestError, match="answer: Field required") as err:
                await session.step({"answr": "1"})
            assert any(e.get("type") == "extra_forbidden" for e in err.value.errors)
            with pytest.raises(TypeError, match="action must be a dict"):
                await session.step("42")
            return await session.step({"answer": str(_answer(first.observation["question"]))})

    assert _run(main()).reward == 1.0


def test_server_side_failures_name_the_cause(any_server):
    async def main():
        async with EpisodeSession(any_server) as session:
            with pytest.raises(ServerError, match="'step' failed on the server") as before_reset:
                await session.step({"answer": "1"})
            with pytest.raises(ServerError, match="dev"):
                await session.reset(split="dev", index=0)
            with pytest.raises(ServerError, match="'reset' failed on the server"):
                await session.reset(split="test", index=5000)
            return before_reset.value, await session.reset(split="test", index=0)

    error, result = _run(main())
    assert "EXECUTION_ERROR" in str(error) and result.observation["task"]["index"] == 0


def test_ws_base_url_and_closed_session(chain_sum_server):
    async def main():
        session = EpisodeSession(chain_sum_server.replace("http", "ws") + "/ws")
        result = await session.reset(split="test", index=1)  # connects on first use
        await session.close()
        await session.close()
        with pytest.raises(ConnectionDroppedError, match="closed"):
            await session.step({"answer": "1"})
        return result

    assert _run(main()).observation["task"]["index"] == 1


def test_32_episodes_through_2_server_sessions_all_complete(capped_server):
    """Without a local limit, refused sessions wait out CAPACITY_REACHED; none is lost."""

    async def main():
        holders = [EpisodeSession(capped_server) for _ in range(2)]
        for h in holders:
            await h.reset(split="test", index=0)  # the server is now full
        sessions: list[EpisodeSession] = []

        async def one(i: int):
            async with EpisodeSession(capped_server, capacity_wait=60) as session:
                sessions.append(session)
                first = await session.reset(split="test", index=i * 31)
                last = await session.step({"answer": str(_answer(first.observation["question"]))})
                return first.observation["task"]["index"], last.reward

        running = asyncio.gather(*(one(i) for i in range(32)))
        await until_async(lambda: any(s.capacity_retries for s in sessions), "a session refused while the server is full")
        for h in holders:
            await h.close()
        return await running, sum(s.capacity_retries for s in sessions)

    results, refusals = _run(main())
    assert sorted(index for index, _ in results) == [i * 31 for i in range(32)]
    assert all(reward == 1.0 for _, reward in results)
    assert refusals > 0


def test_local_limit_avoids_refusals(capped_server):
    async def main():
        results = await asyncio.gather(*(_episode(capped_server, i, right=True, max_sessions=2) for i in range(32)))
        return [(last.reward, session.capacity_retries) for _, last, session in results]

    assert _run(main()) == [(1.0, 0)] * 32


def test_capacity_wait_is_bounded(capped_server):
    async def main():
        holders = [EpisodeSession(capped_server) for _ in range(2)]
        try:
            for h in holders:
                await h.reset(split="test", index=0)
            refused = EpisodeSession(capped_server, capacity_wait=0.5, timeout=3600)  # _run's guard ends a wait this long
            with pytest.raises(CapacityError, match=r"session limit \(2/2 sessions\) for 0.5s.*--max-sessions"):
                await refused.reset(split="test", index=0)
            local = EpisodeSession(capped_server, max_sessions=2, capacity_wait=0.2)
            with pytest.raises(CapacityError, match="waited 0.2s for one of this process's 2 session slots"):
                async with EpisodeSession(capped_server, max_sessions=2), EpisodeSession(capped_server, max_sessions=2):
                    await local.connect()
            return refused.capacity_retries
        finally:
            for h in holders:
                await h.close()

    assert _run(main()) >= 1  # it retried with backoff and gave up after capacity_wait, not after the message timeout


def _child_pids() -> set[int]:
    children = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():
            children.add(int(stat.parent.name))
    return children


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the server process through /proc")
def test_server_killed_mid_episode():
    before = _child_pids()
    with local_server("chain-sum", tiers=5, max_sessions=4, python=server_python()) as url:
        (server_pid,) = _child_pids() - before

        async def main():
            async with EpisodeSession(url, timeout=10) as session:
                await session.reset(split="test", index=3)
                os.kill(server_pid, signal.SIGKILL)
                with pytest.raises(ConnectionDroppedError, match="closed the episode socket during 'step'"):
                    await session.step({"answer": "1"})
                with pytest.raises(ConnectionDroppedError, match="new EpisodeSession"):
                    await session.state()
            with pytest.raises(ServerUnreachableError, match="cannot open the episode socket"):
                await EpisodeSession(url, timeout=5).reset(split="test", index=3)

        _run(main())


@pytest.mark.parametrize(
    "mode, error, message",
    [
        ("malformed", ServerError, "not JSON"),
        ("binary", ServerError, "binary frame"),
        ("untyped", ServerError, "without a 'type'"),
        ("wrongtype", ServerError, "a 'state' frame where a 'observation' frame"),
        ("badreward", ServerError, "non-numeric reward"),
        ("silent", OpenEnvTimeoutError, "no answer to 'reset' within 0.5s; the socket was dropped"),
        ("closeearly", ConnectionDroppedError, "close code 1011: going away"),
        ("noupgrade", ServerError, "refused the WebSocket upgrade with HTTP 404"),
        ("capacity", CapacityError, r"session limit \(1/1 sessions\)"),
    ],
)
def test_hostile_server_gives_clear_errors_and_no_hang(mode, error, message):
    async def main():
        async with hostile_ws_server() as url:
            async with EpisodeSession(f"{url}/ok") as fine:
                assert (await fine.reset()).observation == {"question": "1 + 1 ="}
            session = EpisodeSession(f"{url}/{mode}", timeout=0.5, capacity_wait=0.3)
            with pytest.raises(error, match=message):
                await session.reset()
            if mode not in ("noupgrade",):  # every other failure leaves the socket dropped, never reused
                with pytest.raises(ConnectionDroppedError):
                    await session.step({"answer": "2"})
            await session.close()

    _run(main())


def test_late_answer_is_never_read_as_the_next_reply():
    async def main():
        late = LateAnswer()
        async with hostile_ws_server(late) as url:
            session = EpisodeSession(f"{url}/slowthenok", timeout=0.2)
            with pytest.raises(OpenEnvTimeoutError):
                await session.reset()
            late.release.set()
            await late.sent.wait()  # the stale observation went out now, to a socket already dropped
            with pytest.raises(ConnectionDroppedError, match="no answer to 'reset'"):
                await session.state()
            await session.close()

    _run(main())


def test_cancelled_call_drops_the_socket(chain_sum_server):
    async def main():
        async with hostile_ws_server() as url:
            session = EpisodeSession(f"{url}/silent", timeout=30)
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(session.reset(), 0.2)
            with pytest.raises(ConnectionDroppedError, match="cancelled"):
                await session.reset()
            await session.close()

    _run(main())
