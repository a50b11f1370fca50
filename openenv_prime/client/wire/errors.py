"""Typed errors for the OpenEnv wire: each names the server URL, the environment and what to do next,
so a failed run says why without reading a traceback."""

from __future__ import annotations

from typing import Any


class OpenEnvError(Exception):
    """Base of every error the client raises about a server, a route or an episode."""

    def __init__(self, message: str, *, url: str | None = None, env_name: str | None = None, hint: str | None = None):
        self.url = url
        self.env_name = env_name
        self.hint = hint
        self.message = message
        where = ", ".join(part for part in (f"url {url}" if url else "", f"environment {env_name!r}" if env_name else "") if part)
        text = message + (f" [{where}]" if where else "") + (f". {hint}" if hint else "")
        super().__init__(text)


class UnknownEnvironmentError(OpenEnvError):
    """The server does not serve an environment of that name (HTTP 404)."""


class RouteNotSupportedError(OpenEnvError):
    """The environment does not implement that route (HTTP 501, or 404 from servers without a Task API)."""


class TaskIndexError(OpenEnvError, IndexError):
    """A task index outside the split: what the client raises for an HTTP 400, and what this package's servers raise
    (an IndexError, which openenv's Task API routes answer with 400)."""


class InvalidRequestError(OpenEnvError, ValueError):
    """The server rejected a request body or action (HTTP 422 / ``VALIDATION_ERROR``); ``errors`` lists the fields."""

    def __init__(self, message: str, *, errors: list[Any] | None = None, **kwargs: Any):
        self.errors = list(errors or [])
        if self.errors:
            message = f"{message}: {_describe(self.errors)}"
        super().__init__(message, **kwargs)


class UnknownSplitError(OpenEnvError, ValueError):
    """A split name the environment does not list in ``/splits``."""


class ServerError(OpenEnvError):
    """The server failed (HTTP 5xx, an ``EXECUTION_ERROR`` frame) or answered something that is not the protocol."""


class ExecutionError(ServerError):
    """The environment raised while running a message (an ``EXECUTION_ERROR`` frame); openenv keeps the session open.

    ``detail`` is the environment's own text (its exception's message), for the model to read where it answers an
    action (:mod:`openenv_prime.client.engine.episode`)."""

    def __init__(self, message: str, *, detail: str = "", **kwargs: Any):
        self.detail = detail
        super().__init__(message, **kwargs)


class ServerUnreachableError(OpenEnvError, ConnectionError):
    """Nothing answers at the URL (connection refused, DNS failure) after the bounded retries."""


class OpenEnvTimeoutError(OpenEnvError, TimeoutError):
    """The server did not answer within the timeout; an episode socket that timed out is dropped."""


class ConnectionDroppedError(OpenEnvError, ConnectionError):
    """The episode's socket closed before the episode ended (server killed, network cut, or dropped after a timeout).

    ``close_code`` is the server's WebSocket close code when it sent one (1009: the message was too large)."""

    close_code: int | None = None


class CapacityError(OpenEnvError):
    """The server stayed at its session limit (``CAPACITY_REACHED``) for longer than the allowed wait."""


def _describe(errors: list[Any]) -> str:
    """pydantic/FastAPI field errors as 'loc: msg' pairs, for the exception text."""
    parts = []
    for err in errors[:5]:
        if isinstance(err, dict):
            loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "?"
            parts.append(f"{loc}: {err.get('msg', err.get('type', err))}")
        else:
            parts.append(str(err))
    more = f" (+{len(errors) - 5} more)" if len(errors) > 5 else ""
    return "; ".join(parts) + more
