"""An event loop on a daemon thread for the OpenEnv sockets of a TRL run.

TRL calls the dataset, the reward function and the environments' tools from its own (synchronous) thread, and a
generation can take minutes; the ``/ws`` sessions must keep answering the server's keepalive pings meanwhile, so they
live on a loop of their own and the synchronous side waits on it with :meth:`EventLoopThread.run`.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Coroutine, TypeVar

T = TypeVar("T")


class EventLoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="openenv-prime-sockets", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and wait for its result (its exception is raised here)."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("EventLoopThread.run() called from its own loop; await the coroutine instead")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()
