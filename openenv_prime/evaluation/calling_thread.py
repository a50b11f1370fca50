"""An eval whose model runs on the thread that asked for it, while the eval's sockets run on a thread of their own.

A trainer's model belongs to the trainer's thread: CUDA's current device is per thread (accelerate sets it on the
trainer's thread only), MLX streams are per thread, and a process group's collectives must all run where the device
is set. So an in-training eval must not move the model to a worker thread. Its ``/ws`` sessions, though, must keep
answering the server while the model generates (a blocked event loop misses the server's keepalive pings). The
split: :meth:`CallingThread.run` plays the eval's coroutine on an event loop in a helper thread, and every model call
the coroutine makes through :meth:`CallingThread.call` is handed back and run on the calling thread, which waits for
them until the eval is over.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from typing import Any, Callable, Coroutine, TypeVar

T = TypeVar("T")


class CallingThread:
    """One eval's bridge; :meth:`run` on the calling thread, :meth:`call` from the eval's coroutine."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.current_thread()

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` run on the calling thread; its result (or exception) here."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._calls.put((fn, args, loop, future))
        return await future

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Play ``coro`` on a helper thread's event loop, running its :meth:`call`\\ s here; its result or exception."""
        if threading.current_thread() is not self.thread:
            raise RuntimeError("CallingThread.run() must run on the thread that built it")
        outcome: dict[str, Any] = {}

        def play() -> None:
            try:
                outcome["value"] = asyncio.run(coro)
            except BaseException as err:  # raised on the calling thread below
                outcome["error"] = err
            finally:
                self._calls.put(None)

        sockets = threading.Thread(target=play, name="openenv-prime-eval-sockets", daemon=True)
        sockets.start()
        while (item := self._calls.get()) is not None:
            fn, args, loop, future = item
            try:
                value, error = fn(*args), None
            except Exception as err:  # the eval's coroutine gets it, as if the call had raised there
                value, error = None, err
            loop.call_soon_threadsafe(_settle, future, value, error)
        sockets.join()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]


def _settle(future: asyncio.Future, value: Any, error: BaseException | None) -> None:
    if future.done():  # the eval was cancelled meanwhile
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)
