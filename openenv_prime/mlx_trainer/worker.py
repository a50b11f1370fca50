"""MLX work on the main thread, OpenEnv I/O on an event loop in a second thread, and a clean Ctrl-C.

The OpenEnv sessions stay open across a whole step; their WebSocket keepalive pings must be answered
even while a 30-second generation runs, or the server drops them ("keepalive ping timeout"). So the
async trainer runs on an event loop in a background thread and hands every MLX call back to the main
thread, which executes them one at a time, in order. MLX itself is only ever used from the main thread:
mlx 0.32 on Linux can abort at interpreter exit ("terminate called without an active exception") after
computing on another thread.

Ctrl-C (SIGINT) or SIGTERM does not raise in the middle of an MLX call: it cancels the trainer's task, which
stops at its next ``await`` and can still save a checkpoint and close its sockets. The MLX call in progress
finishes first, except a generation, which polls :meth:`MainThreadMLX.stopping` after every token and is
dropped. A second Ctrl-C raises ``KeyboardInterrupt`` at once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import queue
import signal
import threading
from typing import Any, Callable, Coroutine, TypeVar

T = TypeVar("T")
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class MainThreadMLX:
    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.interrupted: str | None = None  # the name of the signal that asked the run to stop

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """From the event loop: run ``fn`` on the main thread and wait for it without blocking the loop.

        If the waiting task is cancelled, a job that has not started never runs, and one that has started
        runs to its end (so a job that changes several things changes all or none of them).
        """
        job: concurrent.futures.Future = concurrent.futures.Future()
        self._jobs.put((job, functools.partial(fn, *args, **kwargs)))
        return await asyncio.wrap_future(job)

    def stopping(self) -> bool:
        """True once a stop signal arrived: long MLX jobs that may be dropped (generation) poll it to end early."""
        return self.interrupted is not None

    async def barrier(self) -> None:
        """Wait until every MLX job queued so far has finished (after a cancellation, before reading state)."""
        await asyncio.shield(self.run(lambda: None))

    def drive(self, coro: Coroutine[Any, Any, T]) -> T:
        """From the main thread: run ``coro`` on a fresh event loop in a background thread, serving its MLX calls here."""
        done: concurrent.futures.Future = concurrent.futures.Future()
        started = threading.Event()
        handle: dict[str, Any] = {}

        async def main() -> T:
            handle["loop"], handle["task"] = asyncio.get_running_loop(), asyncio.current_task()
            started.set()
            if self.interrupted:
                coro.close()
                raise asyncio.CancelledError
            return await coro

        def wire() -> None:
            try:
                done.set_result(asyncio.run(main()))
            except BaseException as exc:  # handed to the main thread below
                done.set_exception(exc)
            finally:
                started.set()
                self._jobs.put(None)

        def stop(signum: int, frame: Any) -> None:
            if self.interrupted:
                raise KeyboardInterrupt  # asked twice: stop now, without the final checkpoint
            self.interrupted = signal.Signals(signum).name
            if "task" in handle:
                handle["loop"].call_soon_threadsafe(handle["task"].cancel)

        thread = threading.Thread(target=wire, name="openenv-wire", daemon=True)
        previous = {}
        if threading.current_thread() is threading.main_thread():
            previous = {s: signal.signal(s, stop) for s in _STOP_SIGNALS}
        try:
            thread.start()
            self._serve()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
        thread.join()
        return done.result()

    def _serve(self) -> None:
        while True:
            try:
                item = self._jobs.get(timeout=0.5)  # wakes up now and then so that signal handlers run promptly
            except queue.Empty:
                continue
            if item is None:
                return
            job, fn = item
            if not job.set_running_or_notify_cancel():
                continue
            try:
                result = fn()
            except KeyboardInterrupt:
                job.set_exception(RuntimeError("stopped by a second interrupt"))
                raise
            except BaseException as exc:
                job.set_exception(exc)
            else:
                job.set_result(result)
