"""Base-URL normalisation: users paste whatever they have (the server's http URL, a ws:// URL, a URL
ending in /ws); the Task API needs http(s) and episodes need the /ws endpoint of the same server."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

_TO_HTTP = {"http": "http", "https": "https", "ws": "http", "wss": "https"}
_TO_WS = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}


def _split(base_url: str) -> tuple[str, str, str]:
    if not isinstance(base_url, str) or not base_url.strip():
        raise ValueError(f"base_url must be a non-empty URL string like 'http://127.0.0.1:8000', got {base_url!r}")
    parts = urlsplit(base_url.strip())
    scheme = parts.scheme.lower()
    if scheme not in _TO_HTTP or not parts.netloc:
        raise ValueError(
            f"base_url {base_url!r} is not an OpenEnv server URL: use http://, https://, ws:// or wss:// "
            "followed by host:port, e.g. 'http://127.0.0.1:8000'"
        )
    path = parts.path.rstrip("/")
    if path.endswith("/ws"):
        path = path[: -len("/ws")]
    return scheme, parts.netloc, path


def http_base(base_url: str) -> str:
    """The server's http(s) root (no trailing slash), where the Task API routes live."""
    scheme, netloc, path = _split(base_url)
    return urlunsplit((_TO_HTTP[scheme], netloc, path, "", ""))


def ws_endpoint(base_url: str) -> str:
    """The server's ws(s) ``/ws`` endpoint, where each connection is one episode."""
    scheme, netloc, path = _split(base_url)
    return urlunsplit((_TO_WS[scheme], netloc, path + "/ws", "", ""))
