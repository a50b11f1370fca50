"""A scripted OpenAI-compatible chat server for fast, deterministic tests and benchmarks.

It speaks enough of the OpenAI HTTP API for `openai`, httpx and verifiers clients: ``POST
/v1/chat/completions`` (plain JSON, or SSE when ``"stream": true``, with ``n`` choices and a ``usage``
block) and ``GET /v1/models``. A *rule* turns each request body into the reply text, so a test decides
exactly what the "model" says; every request body is recorded for assertions.

Standard library only (``http.server`` in a background thread), so it starts in milliseconds and needs
nothing beyond Python::

    from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer, chain_sum_rule

    with ScriptedOpenAIServer(chain_sum_rule(correct_tiers={0, 1})) as base_url:
        ...  # base_url is "http://127.0.0.1:PORT/v1"

It is a test double, so it sits in `openenv_prime.testing` (see that package's docstring): the tests, the
benchmarks (the model beside `run_eval` and the taskset) and `patches/orchestrator_smoke.py` (its chain_sum parser)
all import it from here.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable

Rule = Callable[[dict[str, Any]], str]
"""Maps one chat-completions request body to the reply text."""

_EXPRESSION = re.compile(r"(-?\d+(?:\s*[-+]\s*\d+)+)\s*=")
_TERM = re.compile(r"[-+]?\s*\d+")


def last_user_text(request: dict[str, Any]) -> str:
    """The text of the last user message of a request (content parts joined)."""
    for message in reversed(request.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return "".join(part.get("text", "") for part in content if isinstance(part, dict))
            return str(content or "")
    return ""


def chain_sum_terms(text: str) -> list[int] | None:
    """The signed terms of the last chain_sum expression ("... 12 + 3 - 4 =") in ``text``, or None."""
    matches = _EXPRESSION.findall(text)
    if not matches:
        return None
    return [int(term.replace(" ", "")) for term in _TERM.findall(matches[-1])]


def chain_sum_tier(terms: list[int]) -> int:
    """The lockstep chain_sum tier of a problem: tier t has t + 2 terms."""
    return len(terms) - 2


def fixed(text: str) -> Rule:
    """A rule that always replies ``text``."""
    return lambda request: text


def chain_sum_rule(correct_tiers: Iterable[int], wrong_offset: int = 1) -> Rule:
    """Answers chain_sum questions exactly for the tiers in ``correct_tiers`` and off by
    ``wrong_offset`` for every other tier; replies "I don't know" when no problem is found."""
    correct = frozenset(correct_tiers)

    def rule(request: dict[str, Any]) -> str:
        terms = chain_sum_terms(last_user_text(request))
        if terms is None:
            return "I don't know"
        total = sum(terms)
        return str(total if chain_sum_tier(terms) in correct else total + wrong_offset)

    return rule


def _token_count(text: str) -> int:
    return len(text.split())


class ScriptedOpenAIServer:
    """Context manager serving the scripted model on 127.0.0.1 (ephemeral port); yields the ``/v1`` base URL.

    ``delay`` seconds are slept before each completion (to let tests and benchmarks model a slow
    model); the first ``busy_first`` completion requests get HTTP 503 (to test clients' retries);
    ``model`` is the id ``/v1/models`` lists. ``requests`` holds every completion request body.
    """

    def __init__(self, rule: Rule, *, model: str = "scripted", delay: float = 0.0, busy_first: int = 0) -> None:
        self.rule = rule
        self.model = model
        self.delay = delay
        self.busy_left = busy_first
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("ScriptedOpenAIServer is not running; use it as a context manager")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> str:
        server = self

        class Handler(_Handler):
            scripted = server

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 512  # many concurrent clients connect at once

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="scripted-openai", daemon=True)
        self._thread.start()
        return self.base_url

    def __exit__(self, *exc_info: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._httpd = None

    def _record(self, request: dict[str, Any]) -> bool:
        """Logs the request; False when it is to be answered 503 (``busy_first``)."""
        with self._lock:
            self.requests.append(request)
            if self.busy_left > 0:
                self.busy_left -= 1
                return False
            return True


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real inference servers do
    disable_nagle_algorithm = True  # headers and body go out as separate writes: no 40 ms delayed-ACK stall
    scripted: ScriptedOpenAIServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet in tests
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send_json(200, {"object": "list", "data": [
                {"id": self.scripted.model, "object": "model", "created": 0, "owned_by": "scripted"}]})
        else:
            self._send_json(404, {"error": {"message": f"no route GET {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route POST {self.path}", "type": "not_found"}})
            return
        try:
            request = json.loads(raw)
            if not isinstance(request.get("messages"), list):
                raise ValueError("'messages' must be a list")
        except ValueError as exc:
            self._send_json(400, {"error": {"message": f"bad request: {exc}", "type": "invalid_request_error"}})
            return
        if not self.scripted._record(request):
            self._send_json(503, {"error": {"message": "scripted: busy, retry", "type": "server_busy"}})
            return
        if self.scripted.delay:
            time.sleep(self.scripted.delay)  # sleep-is-work: a model that takes this long per completion
        replies = [self.scripted.rule(request) for _ in range(int(request.get("n") or 1))]
        prompt_tokens = sum(_token_count(str(m.get("content") or "")) for m in request["messages"])
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": sum(_token_count(r) for r in replies),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        model = request.get("model") or self.scripted.model
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:12]}"
        if request.get("stream"):
            self._send_stream(completion_id, model, replies, usage, request)
        else:
            self._send_json(200, {
                "id": completion_id, "object": "chat.completion", "created": int(time.time()), "model": model,
                "choices": [
                    {"index": i, "message": {"role": "assistant", "content": reply},
                     "finish_reason": "stop", "logprobs": None}
                    for i, reply in enumerate(replies)
                ],
                "usage": usage,
            })

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(self, completion_id: str, model: str, replies: list[str], usage: dict[str, int],
                     request: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
            return {"id": completion_id, "object": "chat.completion.chunk", "created": int(time.time()),
                    "model": model, "choices": choices, **extra}

        events: list[dict[str, Any]] = []
        for i, reply in enumerate(replies):
            events.append(chunk([{"index": i, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]))
            for piece in re.findall(r"\S+\s*|\s+", reply):  # one chunk per word, as a tokenizer would roughly do
                events.append(chunk([{"index": i, "delta": {"content": piece}, "finish_reason": None}]))
            events.append(chunk([{"index": i, "delta": {}, "finish_reason": "stop"}]))
        if (request.get("stream_options") or {}).get("include_usage"):
            events.append(chunk([], usage=usage))
        for event in events:
            self._write_chunk(f"data: {json.dumps(event)}\n\n".encode())
        self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()
