"""Waiting in tests for something to happen: the one place under tests/ that compares a clock reading.

A test never bounds how long real work may take (speed is measured in benchmarks/): it waits for the cause
(a file written, a signal handled, a server answering), and fails at once when the process it waits on has
exited. ``timeout`` is only a hang guard, far above the time on any machine: reaching it means stuck, not
slow. tests/test_no_time_thresholds.py keeps clock comparisons out of every other test file.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

HANG_GUARD_S = 300.0


def until(condition: Callable[[], T], what: str, *, process: subprocess.Popen | None = None,
          timeout: float = HANG_GUARD_S, interval: float = 0.05) -> T:
    """Poll ``condition`` until it returns a true value, and return that value.

    ``what`` names the awaited event in the failure ("a checkpoint of step 2"); with ``process``, its exit
    ends the wait at once (with its output, when it was started with ``stdout=PIPE``)."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if process is not None and process.poll() is not None:
            raise AssertionError(f"waiting for {what}: the process exited with code {process.returncode} first"
                                 f"{_output(process)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"waiting for {what}: nothing after {timeout:g}s (a hang guard: stuck, not slow)")
        time.sleep(interval)
    return value


async def until_async(condition: Callable[[], T | Awaitable[T]], what: str, *, timeout: float = HANG_GUARD_S,
                      interval: float = 0.05) -> T:
    """``until`` inside an event loop: ``condition`` may be a plain or an async function."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"waiting for {what}: nothing after {timeout:g}s (a hang guard: stuck, not slow)")
        await asyncio.sleep(interval)


def _output(process: subprocess.Popen) -> str:
    stream = process.stdout
    if stream is None:
        return ""
    text = stream.read()
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return f":\n{text[-3000:]}"
