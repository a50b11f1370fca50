"""The model side of an eval: a `Policy` turns chat prompts into reply texts, greedily.

The eval loop hands a policy one batch of prompts per round, so an in-process policy (the MLX trainer's)
can generate the whole batch at once and an HTTP policy can send the requests concurrently.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from typing import Any, Awaitable, Callable, Protocol, runtime_checkable

import httpx

from openenv_prime.client.wire.backoff import backoff


class Reply(str):
    """A reply text that also says how many tokens the model generated for it (None: unknown). A policy may return
    these in place of plain strings; the eval keeps the count in each episode's record (``TaskResult.tokens``)."""

    tokens: int | None

    def __new__(cls, text: str, tokens: int | None = None) -> "Reply":
        reply = super().__new__(cls, text)
        reply.tokens = tokens
        return reply


def reply_tokens(reply: str) -> int | None:
    """The tokens a policy reported for ``reply`` (a :class:`Reply`), else None."""
    return getattr(reply, "tokens", None)


@runtime_checkable
class Policy(Protocol):
    """Chat messages in, reply texts out (one per prompt, same order), decoded greedily; a :class:`Reply` where the
    policy knows the generated tokens.

    An in-process policy may block the event loop while it generates; if that outlasts the server's
    keepalive (~40 s), the eval replays the affected episodes on new sockets (``EvalResult.reconnects``).
    Running generation in ``asyncio.to_thread`` avoids the replays.
    """

    async def complete(self, prompts: list[list[dict]]) -> list[str]: ...


class _CallablePolicy:
    """A plain function ``prompts -> replies`` (sync or async) as a :class:`Policy`. A sync one is handed to ``run``:
    the calling thread's (:class:`CallingThread`), or a worker thread (``asyncio.to_thread``), so the eval's sockets
    stay served while it generates."""

    def __init__(self, fn: Callable[[list[list[dict]]], Any], run: Callable[..., Awaitable] = asyncio.to_thread):
        self.fn = fn
        self.run = run

    async def complete(self, prompts: list[list[dict]]) -> list[str]:
        if inspect.iscoroutinefunction(self.fn):
            return await self.fn(prompts)
        return await self.run(self.fn, prompts)


def as_policy(policy: Policy | Callable[[list[list[dict]]], Any], *,
              run: Callable[..., Awaitable] = asyncio.to_thread) -> Policy:
    """``policy`` if it has an async ``complete(prompts)``, else a function of the prompts wrapped as one, whose
    calls go through ``run`` (default: a worker thread)."""
    if isinstance(policy, Policy):
        return policy
    if callable(policy):
        return _CallablePolicy(policy, run)
    raise TypeError(f"policy must have an async complete(prompts) method or be a function of the prompts, "
                    f"got {type(policy).__name__}")


_BUSY = {429, 502, 503, 504}


class ModelEndpointError(RuntimeError):
    """The OpenAI-compatible model endpoint could not be reached or answered something unusable."""


def chat_completions_url(base_url: str) -> str:
    """`.../v1/chat/completions` for a base URL given with or without its `/v1` suffix."""
    root = base_url.strip().rstrip("/")
    if not root.startswith(("http://", "https://")):
        raise ValueError(f"model base URL must start with http:// or https://, got {base_url!r}")
    if root.endswith("/chat/completions"):
        return root
    if not root.endswith("/v1"):
        root += "/v1"
    return root + "/chat/completions"


class OpenAIPolicy:
    """A `Policy` over any OpenAI-compatible `/v1/chat/completions` endpoint (vLLM, mlx_lm.server, OpenAI...).

    Requests run concurrently, at most ``max_concurrency`` at a time; ``temperature`` defaults to 0 so
    that the same model gives the same replies. A dropped connection or a busy answer (429, 502-504) is
    retried ``retries`` times with backoff: small servers such as ``mlx_lm.server`` reset connections
    when many arrive at once.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        max_concurrency: int = 32,
        timeout: float = 120.0,
        retries: int = 3,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}")
        if retries < 0:
            raise ValueError(f"retries must be at least 0, got {retries}")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
        self.url = chat_completions_url(base_url)
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.max_concurrency = max_concurrency
        self.timeout = timeout
        self.retries = retries
        self.extra_body = dict(extra_body or {})
        # built once: loading the CA bundle costs tens of ms, which every complete() call's client would pay
        self._ssl = httpx.create_ssl_context()

    async def complete(self, prompts: list[list[dict]]) -> list[Reply]:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        limits = httpx.Limits(max_connections=self.max_concurrency)
        semaphore = asyncio.Semaphore(self.max_concurrency)
        async with httpx.AsyncClient(timeout=self.timeout, headers=headers, limits=limits, verify=self._ssl) as client:

            async def one(messages: list[dict]) -> Reply:
                async with semaphore:
                    return await self._post(client, messages)

            return list(await asyncio.gather(*(one(messages) for messages in prompts)))

    async def _post(self, client: httpx.AsyncClient, messages: list[dict]) -> Reply:
        body = {
            "model": self.model,
            "messages": messages,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            **self.extra_body,
        }
        for attempt in range(self.retries + 1):
            try:
                response = await client.post(self.url, json=body)
            except httpx.TimeoutException as exc:
                raise ModelEndpointError(
                    f"model endpoint {self.url} did not answer within {self.timeout:g} s; "
                    "raise the timeout or check that the model server is not overloaded"
                ) from exc
            except httpx.TransportError as exc:
                if attempt < self.retries:
                    await asyncio.sleep(backoff(attempt, base=0.1, cap=2.0))
                    continue
                raise ModelEndpointError(
                    f"cannot reach the model endpoint {self.url} after {attempt + 1} attempt(s) "
                    f"({type(exc).__name__}: {exc}); start the model server or pass the right --model-base-url"
                ) from exc
            if response.status_code in _BUSY and attempt < self.retries:
                await asyncio.sleep(backoff(attempt, base=0.1, cap=2.0))
                continue
            break
        if response.status_code != 200:
            raise ModelEndpointError(
                f"model endpoint {self.url} answered HTTP {response.status_code} for model {self.model!r}: "
                f"{response.text[:300]}"
            )
        try:
            answer = response.json()
            content = answer["choices"][0]["message"].get("content")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ModelEndpointError(
                f"model endpoint {self.url} answered something that is not a chat completion: {response.text[:300]}"
            ) from exc
        usage = answer.get("usage")
        tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
        return Reply(content or "", tokens if isinstance(tokens, int) else None)
