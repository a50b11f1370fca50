"""MLX work on the main thread, OpenEnv I/O on an event loop in a second thread.

The OpenEnv sessions stay open across a whole step; their WebSocket keepalive pings must be answered
even while a 30-second generation runs, or the server drops them ("keepalive ping timeout"). So the
async trainer runs on an event loop in a background thread and hands every MLX call back to the main
thread, which executes them one at a time. MLX itself is only ever used from the main thread: mlx
0.32 on Linux can abort at interpreter exit ("terminate called without an active exception") after
computing on another thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import queue
import threading
from typing import Any, Callable, Coroutine, TypeVar

T = TypeVar("T")


class MainThreadMLX:
    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """From the event loop: run ``fn`` on the main thread and wait for it without blocking the loop."""
        job: concurrent.futures.Future = concurrent.futures.Future()
        self._jobs.put((job, functools.partial(fn, *args, **kwargs)))
        return await asyncio.wrap_future(job)

    def drive(self, coro: Coroutine[Any, Any, T]) -> T:
        """From the main thread: run ``coro`` on a fresh event loop in a background thread, serving its MLX calls here."""
        done: concurrent.futures.Future = concurrent.futures.Future()

        def wire() -> None:
            try:
                done.set_result(asyncio.run(coro))
            except BaseException as exc:  # handed to the main thread below
                done.set_exception(exc)
            finally:
                self._jobs.put(None)

        thread = threading.Thread(target=wire, name="openenv-wire", daemon=True)
        thread.start()
        while (item := self._jobs.get()) is not None:
            job, fn = item
            if job.set_running_or_notify_cancel():
                try:
                    job.set_result(fn())
                except BaseException as exc:
                    job.set_exception(exc)
        thread.join()
        return done.result()
