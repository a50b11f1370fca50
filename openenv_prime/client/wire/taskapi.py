"""Task API clients (sync and async) for OpenEnv servers: list environments, splits and task specs.

Both clients share one request/response mapping: every public method is written once as a generator
that yields the HTTP calls it needs (``_Call``, or a list of calls that may run concurrently) and
receives their decoded JSON, or the typed error the mapping raised. The sync and async classes only
differ in how they run those calls, so fallbacks, split checks and error messages cannot drift apart.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Generator
from urllib.parse import quote

import httpx

from openenv_prime.client.wire.backoff import backoff
from openenv_prime.client.wire.errors import (
    InvalidRequestError,
    OpenEnvError,
    OpenEnvTimeoutError,
    RouteNotSupportedError,
    ServerError,
    ServerUnreachableError,
    TaskIndexError,
    UnknownEnvironmentError,
    UnknownSplitError,
)
from openenv_prime.client.wire.urls import http_base

# Pages in flight in the async client: two overlap our decoding with the server encoding the next page;
# more only crowd a single-process server (measured: 8 in flight was slower than 1 or 2 in most rounds).
_PAGE_CONCURRENCY = 2


@dataclass(frozen=True, slots=True)
class _Call:
    method: str
    path: str
    body: dict[str, Any] | None = None


_Flow = Generator["_Call | list[_Call]", Any, Any]


def _check_int(name: str, value: Any, *, minimum: int | None = None) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


class _TaskAPICore:
    """Request flows and the HTTP-status-to-error mapping shared by both clients."""

    def __init__(self, base_url: str, env_name: str | None):
        if env_name is not None and (not isinstance(env_name, str) or not env_name):
            raise ValueError(f"env_name must be a non-empty string or None, got {env_name!r}")
        self.base_url = http_base(base_url)
        self.env_name = env_name
        self._env_given = env_name is not None
        self._split_names: set[str] | None = None
        self._splits_supported = True

    # ---- response mapping -------------------------------------------------------------------------
    def interpret(self, call: _Call, response: httpx.Response) -> Any:
        """Decoded JSON of a 2xx answer; otherwise the typed error for the status code."""
        status = response.status_code
        where = f"{call.method} {call.path}"
        ctx = {"url": self.base_url + call.path, "env_name": self.env_name}
        if 200 <= status < 300:
            try:
                return response.json()
            except ValueError:
                raise ServerError(f"{where} answered HTTP {status} with a body that is not JSON: {response.text[:200]!r}", **ctx) from None
        detail = _detail(response)
        body = call.body or {}
        if status == 404:
            if call.path == "/list_environments" or detail == "Not Found":
                raise RouteNotSupportedError(
                    f"{where} does not exist on this server", hint="serve the environment with openenv >= 0.4.1, which has the Task API", **ctx
                )
            raise UnknownEnvironmentError(f"the server has no environment {self.env_name!r} ({detail})", **ctx)
        if status == 501:
            raise RouteNotSupportedError(f"{where} is not supported: {detail}", hint="the environment does not implement this Task API method", **ctx)
        if status == 400 and "index" in body:
            raise TaskIndexError(
                f"task index {body['index']} is out of range for split {body.get('split')!r} ({detail})",
                hint="valid indices are 0 .. num_tasks(split) - 1",
                **ctx,
            )
        if status in (400, 422):
            errors = detail if isinstance(detail, list) else []
            text = f"the server rejected {where} with body {body}" + ("" if errors else f": {detail}")
            raise InvalidRequestError(text, errors=errors, hint="fix the named fields", **ctx)
        raise ServerError(f"{where} failed with HTTP {status}: {detail}", hint="the server's log has the traceback", **ctx)

    def transport_error(self, call: _Call, exc: Exception, attempts: int) -> OpenEnvError:
        ctx = {"url": self.base_url + call.path, "env_name": self.env_name}
        if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
            return OpenEnvTimeoutError(
                f"{call.method} {call.path} timed out {attempts} time(s) ({type(exc).__name__})",
                hint="the server is overloaded or stuck; raise timeout= or check the server",
                **ctx,
            )
        return ServerUnreachableError(
            f"cannot reach the OpenEnv server after {attempts} attempt(s) ({type(exc).__name__}: {exc})",
            hint="start the server (e.g. `openenv-prime serve chain-sum`) or fix base_url",
            **ctx,
        )

    # ---- flows ------------------------------------------------------------------------------------
    def list_environments(self) -> _Flow:
        data = yield _Call("GET", "/list_environments")
        if not isinstance(data, list) or not all(isinstance(name, str) for name in data):
            raise self._malformed("/list_environments", "a list of names", data)
        return data

    def resolve_env(self) -> _Flow:
        if self.env_name is None:
            names = yield from self.list_environments()
            if len(names) != 1:
                raise UnknownEnvironmentError(
                    f"the server lists {len(names)} environments {names}, so the environment is ambiguous",
                    url=self.base_url,
                    hint="pass env_name= one of them",
                )
            self.env_name = names[0]
        return self.env_name

    def env_request(self, method: str, route: str, body: dict[str, Any] | None = None) -> _Flow:
        env = yield from self.resolve_env()
        try:
            return (yield _Call(method, f"/{quote(env, safe='')}/{route}", body))
        except UnknownEnvironmentError as exc:
            try:
                names = yield from self.list_environments()
            except OpenEnvError:
                raise exc from None
            raise UnknownEnvironmentError(
                f"the server has no environment {env!r}", url=self.base_url, env_name=env, hint=f"it serves {names}; pass env_name= one of them"
            ) from None

    def splits(self) -> _Flow:
        try:
            data = yield from self.env_request("GET", "splits")
        except RouteNotSupportedError:
            self._splits_supported = False  # nothing to check split names against; do not ask again
            raise
        if not isinstance(data, list):
            raise self._malformed("splits", "a list", data)
        splits = [s if isinstance(s, dict) else {"name": str(s), "type": str(s)} for s in data]
        if not all(isinstance(s.get("name"), str) for s in splits):
            raise self._malformed("splits", "split objects with a 'name'", data)
        self._split_names = {s["name"] for s in splits}
        return splits

    def check_split(self, split: Any) -> _Flow:
        """Unknown splits end in a bare HTTP 500 on the server, so name them here, with the splits that exist."""
        if not isinstance(split, str) or not split:
            raise TypeError(f"split must be a non-empty string, got {split!r}")
        if not self._splits_supported or (self._split_names is not None and split in self._split_names):
            return
        try:
            yield from self.splits()
        except RouteNotSupportedError:
            return  # the server will answer for itself
        if split not in self._split_names:
            raise UnknownSplitError(
                f"unknown split {split!r}",
                url=self.base_url,
                env_name=self.env_name,
                hint=f"the environment's splits are {sorted(self._split_names)}; use one of them",
            )

    def num_tasks(self, split: str) -> _Flow:
        yield from self.check_split(split)
        try:
            return (yield from self._num_tasks_route(split))
        except RouteNotSupportedError:
            return len((yield from self._tasks_unchecked(split)))

    def _num_tasks_route(self, split: str) -> _Flow:
        data = yield from self.env_request("POST", "num_tasks", {"split": split})
        count = data.get("num_tasks") if isinstance(data, dict) else None
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise self._malformed("num_tasks", "{'num_tasks': <int >= 0>}", data)
        return count

    def get_task(self, split: str, index: int) -> _Flow:
        _check_int("index", index)
        yield from self.check_split(split)
        data = yield from self.env_request("POST", "task", {"split": split, "index": index})
        task = data.get("task") if isinstance(data, dict) else None
        if not isinstance(task, dict):
            raise self._malformed("task", "{'task': {...}}", data)
        return task

    def get_task_range(self, split: str, start: int | None, stop: int | None, page_size: int) -> _Flow:
        """``task_range`` pages; without that route, ``/tasks`` when it holds every spec, else ``/task`` per index."""
        for name, value in (("start", start), ("stop", stop)):
            if value is not None:
                _check_int(name, value)
        _check_int("page_size", page_size, minimum=1)
        yield from self.check_split(split)
        listed: list[dict] | None = None  # the /tasks answer, once fetched
        try:
            total = yield from self._num_tasks_route(split)
        except RouteNotSupportedError:
            try:
                listed = yield from self._tasks_unchecked(split)
            except RouteNotSupportedError:
                raise RouteNotSupportedError(
                    f"the server cannot list the tasks of split {split!r}: it has no Task API (num_tasks and tasks answer 501)",
                    url=self.base_url,
                    env_name=self.env_name,
                    hint="pass a task list with the reset arguments of each task (--tasks FILE.jsonl), or serve the "
                    "environment with `openenv-prime serve MODULE:CLASS --tasks tasks.jsonl`",
                ) from None
            total = len(listed)
        start, stop, _ = slice(start, stop).indices(total)
        if stop <= start:
            return []
        pages = [(a, min(a + page_size, stop)) for a in range(start, stop, page_size)]
        path = f"/{quote(self.env_name, safe='')}/task_range"
        try:
            answers = yield [_Call("POST", path, {"split": split, "start": a, "stop": b}) for a, b in pages]
        except RouteNotSupportedError:
            return (yield from self._range_without_task_range(split, start, stop, total, listed))
        tasks: list[dict] = []
        for (a, b), answer in zip(pages, answers):
            page = answer.get("tasks") if isinstance(answer, dict) else None
            if not isinstance(page, list) or len(page) != b - a or not all(isinstance(t, dict) for t in page):
                raise self._malformed("task_range", f"{{'tasks': [{b - a} task objects]}} for [{a}, {b})", answer)
            tasks.extend(page)
        return tasks

    def _range_without_task_range(self, split: str, start: int, stop: int, total: int, listed: list[dict] | None) -> _Flow:
        """Tasks ``[start, stop)`` from ``/tasks`` (one request) when it lists all ``total``, else from ``/task``."""
        if listed is None:
            try:
                listed = yield from self._tasks_unchecked(split)
            except RouteNotSupportedError:
                listed = []
        if len(listed) == total:
            return listed[start:stop]
        task_path = f"/{quote(self.env_name, safe='')}/task"
        try:
            answers = yield [_Call("POST", task_path, {"split": split, "index": i}) for i in range(start, stop)]
        except RouteNotSupportedError:
            raise RouteNotSupportedError(
                f"cannot list the {total} tasks of split {split!r}: the server has no task_range or task route, "
                f"and /tasks returned {len(listed)} of them",
                url=self.base_url,
                env_name=self.env_name,
                hint="implement get_task_range or get_task on the environment (or list_tasks returning every task), "
                "or pass a task list (--tasks FILE.jsonl)",
            ) from None
        tasks = [a.get("task") if isinstance(a, dict) else None for a in answers]
        if not all(isinstance(t, dict) for t in tasks):
            raise self._malformed("task", "{'task': {...}}", next(a for a, t in zip(answers, tasks) if not isinstance(t, dict)))
        return tasks

    def tasks(self, split: str) -> _Flow:
        yield from self.check_split(split)
        return (yield from self._tasks_unchecked(split))

    def _tasks_unchecked(self, split: str) -> _Flow:
        data = yield from self.env_request("POST", "tasks", {"split": split})
        tasks = data.get("tasks") if isinstance(data, dict) else None
        if not isinstance(tasks, list) or not all(isinstance(t, dict) for t in tasks):
            raise self._malformed("tasks", "{'tasks': [...]}", data)
        return tasks

    def schema(self) -> _Flow:
        data = yield _Call("GET", "/schema")
        if not isinstance(data, dict):
            raise self._malformed("/schema", "a JSON object", data)
        return data

    def _malformed(self, route: str, expected: str, got: Any) -> ServerError:
        return ServerError(
            f"{route} answered {str(got)[:200]!r}, expected {expected}",
            url=self.base_url,
            env_name=self.env_name,
            hint="the server does not speak the OpenEnv Task API this client knows (openenv 0.4.1 - 0.10.0)",
        )


def _detail(response: httpx.Response) -> Any:
    try:
        data = response.json()
    except ValueError:
        return response.text[:500] or response.reason_phrase
    return data.get("detail", data) if isinstance(data, dict) else data


class TaskAPIClient:
    """Synchronous Task API client. ``env_name=None`` uses the single environment the server lists.

    Connect errors and timeouts are retried ``retries`` times (all Task API calls are idempotent);
    HTTP errors are not retried and raise the typed errors of ``openenv_prime.client.wire.errors``.
    """

    def __init__(self, base_url: str, *, env_name: str | None = None, timeout: float = 10.0, retries: int = 3):
        _check_int("retries", retries, minimum=0)
        self._core = _TaskAPICore(base_url, env_name)
        self._retries = retries
        self._http = httpx.Client(base_url=self._core.base_url, timeout=timeout)

    @property
    def base_url(self) -> str:
        return self._core.base_url

    @property
    def env_name(self) -> str:
        """The environment's name; asks ``/list_environments`` the first time when none was given."""
        return self._run(self._core.resolve_env())

    def list_environments(self) -> list[str]:
        return self._run(self._core.list_environments())

    def splits(self) -> list[dict]:
        return self._run(self._core.splits())

    def num_tasks(self, split: str) -> int:
        return self._run(self._core.num_tasks(split))

    def get_task(self, split: str, index: int) -> dict:
        return self._run(self._core.get_task(split, index))

    def get_task_range(self, split: str, start: int | None = None, stop: int | None = None, page_size: int = 1024) -> list[dict]:
        """Specs of tasks ``[start, stop)`` (slice rules), fetched ``page_size`` at a time."""
        return self._run(self._core.get_task_range(split, start, stop, page_size))

    def tasks(self, split: str) -> list[dict]:
        """The server's ``/tasks`` answer, which a server may cap; ``get_task_range`` gets every task."""
        return self._run(self._core.tasks(split))

    def schema(self) -> dict:
        return self._run(self._core.schema())

    def action_schema(self) -> dict | None:
        """The JSON schema of the environment's action, or None when the server has no ``/schema``."""
        try:
            return self.schema().get("action")
        except RouteNotSupportedError:
            return None

    def observation_schema(self) -> dict | None:
        """The JSON schema of the environment's observation, or None when the server has no ``/schema``."""
        try:
            return self.schema().get("observation")
        except RouteNotSupportedError:
            return None

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "TaskAPIClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, flow: _Flow) -> Any:
        try:
            step = next(flow)
            while True:
                try:
                    result = [self._send(c) for c in step] if isinstance(step, list) else self._send(step)
                except OpenEnvError as exc:
                    step = flow.throw(exc)
                else:
                    step = flow.send(result)
        except StopIteration as stop:
            return stop.value

    def _send(self, call: _Call) -> Any:
        for attempt in range(self._retries + 1):
            try:
                response = self._http.request(call.method, call.path, json=call.body)
            except httpx.TransportError as exc:
                if attempt == self._retries:
                    raise self._core.transport_error(call, exc, attempt + 1) from exc
                time.sleep(backoff(attempt))
            else:
                return self._core.interpret(call, response)


class AsyncTaskAPIClient:
    """Asynchronous twin of :class:`TaskAPIClient` (same methods, awaited; pages are fetched concurrently).

    ``env_name`` is the given name, or the resolved one once any call (or ``resolve_env_name()``) has asked the server.
    """

    def __init__(self, base_url: str, *, env_name: str | None = None, timeout: float = 10.0, retries: int = 3):
        _check_int("retries", retries, minimum=0)
        self._core = _TaskAPICore(base_url, env_name)
        self._retries = retries
        self._http = httpx.AsyncClient(base_url=self._core.base_url, timeout=timeout)

    @property
    def base_url(self) -> str:
        return self._core.base_url

    @property
    def env_name(self) -> str | None:
        return self._core.env_name

    async def resolve_env_name(self) -> str:
        return await self._run(self._core.resolve_env())

    async def list_environments(self) -> list[str]:
        return await self._run(self._core.list_environments())

    async def splits(self) -> list[dict]:
        return await self._run(self._core.splits())

    async def num_tasks(self, split: str) -> int:
        return await self._run(self._core.num_tasks(split))

    async def get_task(self, split: str, index: int) -> dict:
        return await self._run(self._core.get_task(split, index))

    async def get_task_range(self, split: str, start: int | None = None, stop: int | None = None, page_size: int = 1024) -> list[dict]:
        return await self._run(self._core.get_task_range(split, start, stop, page_size))

    async def tasks(self, split: str) -> list[dict]:
        return await self._run(self._core.tasks(split))

    async def schema(self) -> dict:
        return await self._run(self._core.schema())

    async def action_schema(self) -> dict | None:
        """The JSON schema of the environment's action, or None when the server has no ``/schema``."""
        try:
            return (await self.schema()).get("action")
        except RouteNotSupportedError:
            return None

    async def observation_schema(self) -> dict | None:
        """The JSON schema of the environment's observation, or None when the server has no ``/schema``."""
        try:
            return (await self.schema()).get("observation")
        except RouteNotSupportedError:
            return None

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncTaskAPIClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _run(self, flow: _Flow) -> Any:
        try:
            step = next(flow)
            while True:
                try:
                    result = await (self._send_many(step) if isinstance(step, list) else self._send(step))
                except OpenEnvError as exc:
                    step = flow.throw(exc)
                else:
                    step = flow.send(result)
        except StopIteration as stop:
            return stop.value

    async def _send_many(self, calls: list[_Call]) -> list[Any]:
        gate = asyncio.Semaphore(_PAGE_CONCURRENCY)

        async def one(call: _Call) -> Any:
            async with gate:
                return await self._send(call)

        try:
            async with asyncio.TaskGroup() as group:  # the first failure cancels the other pages
                running = [group.create_task(one(c)) for c in calls]
        except BaseExceptionGroup as failed:
            raise failed.exceptions[0] from None
        return [t.result() for t in running]

    async def _send(self, call: _Call) -> Any:
        for attempt in range(self._retries + 1):
            try:
                response = await self._http.request(call.method, call.path, json=call.body)
            except httpx.TransportError as exc:
                if attempt == self._retries:
                    raise self._core.transport_error(call, exc, attempt + 1) from exc
                await asyncio.sleep(backoff(attempt))
            else:
                return self._core.interpret(call, response)
