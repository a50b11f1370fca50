"""The scripted model server answers like an OpenAI endpoint (plain and streamed) and follows its rule."""

from __future__ import annotations

import asyncio

import httpx
import openai
import pytest

from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer, chain_sum_rule, chain_sum_terms, fixed

QUESTION = "State the final answer to the following arithmetic problem: 6639 + 8543 - 9399 + 6527 - 7599 ="


def test_chain_sum_terms_parses_signed_terms():
    assert chain_sum_terms(QUESTION) == [6639, 8543, -9399, 6527, -7599]
    assert chain_sum_terms("no problem here") is None


def test_plain_and_streamed_completions_follow_the_rule():
    server = ScriptedOpenAIServer(chain_sum_rule(correct_tiers={3}))
    with server as base_url:
        client = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0, timeout=10)
        messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": QUESTION}]
        plain = client.chat.completions.create(model="m", messages=messages, n=2)
        assert [c.message.content for c in plain.choices] == ["4711", "4711"]
        assert plain.usage.completion_tokens == 2
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": QUESTION.replace(" - 7599", "")}],
            stream=True, stream_options={"include_usage": True})
        chunks = list(stream)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == str(6639 + 8543 - 9399 + 6527 + 1)  # tier 2 is answered off by one
        assert chunks[-1].usage is not None
        assert [m.id for m in client.models.list()] == ["scripted"]
    assert len(server.requests) == 2
    assert server.requests[0]["messages"] == messages


def test_concurrent_requests_all_answered():
    async def main(base_url: str) -> list[str]:
        async with httpx.AsyncClient(base_url=base_url, timeout=10) as client:
            async def one(i: int) -> str:
                r = await client.post("/chat/completions", json={"model": "m", "messages": [
                    {"role": "user", "content": f"{i} + 1 ="}]})
                r.raise_for_status()
                return r.json()["choices"][0]["message"]["content"]
            return await asyncio.gather(*(one(i) for i in range(64)))

    with ScriptedOpenAIServer(chain_sum_rule(correct_tiers={0})) as base_url:
        assert asyncio.run(main(base_url)) == [str(i + 1) for i in range(64)]


def test_bad_request_and_unknown_route():
    with ScriptedOpenAIServer(fixed("hi")) as base_url:
        assert httpx.post(f"{base_url}/chat/completions", json={"model": "m"}, timeout=5).status_code == 400
        assert httpx.get(f"{base_url}/nope", timeout=5).status_code == 404


def test_base_url_needs_a_running_server():
    with pytest.raises(RuntimeError, match="context manager"):
        ScriptedOpenAIServer(fixed("hi")).base_url
