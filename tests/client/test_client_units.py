"""URL normalisation, rendering and error texts: pure functions, checked with examples and hypothesis."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.client import (
    EpisodeSession,
    InvalidRequestError,
    TaskAPIClient,
    UnknownSplitError,
    http_base,
    observation_to_text,
    reply_to_action,
    ws_endpoint,
)
from openenv_prime.client.wire.session import _Gate

CHAIN_SUM_ACTION = {
    "additionalProperties": False,
    "properties": {
        "metadata": {"additionalProperties": True, "type": "object", "title": "Metadata"},
        "answer": {"title": "Answer", "type": "string"},
    },
    "required": ["answer"],
    "title": "ChainSumAction",
    "type": "object",
}


@pytest.mark.parametrize(
    "given_url, http, ws",
    [
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000", "ws://127.0.0.1:8000/ws"),
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000", "ws://127.0.0.1:8000/ws"),
        ("ws://127.0.0.1:8000/ws", "http://127.0.0.1:8000", "ws://127.0.0.1:8000/ws"),
        ("wss://env.example.org/prefix/ws/", "https://env.example.org/prefix", "wss://env.example.org/prefix/ws"),
        ("HTTPS://env.example.org/a", "https://env.example.org/a", "wss://env.example.org/a/ws"),
    ],
)
def test_base_urls_normalise_to_http_root_and_ws_endpoint(given_url, http, ws):
    assert http_base(given_url) == http
    assert ws_endpoint(given_url) == ws


@pytest.mark.parametrize("bad", ["", "127.0.0.1:8000", "ftp://host/x", "http://", None])
def test_bad_base_url_is_rejected_with_an_example(bad):
    with pytest.raises(ValueError, match="http://127.0.0.1:8000"):
        http_base(bad)


_hosts = st.from_regex(r"[a-z][a-z0-9]{0,10}(\.[a-z]{2,5})?(:[1-9][0-9]{0,4})?", fullmatch=True)
_paths = st.from_regex(r"(/[a-z0-9_-]{1,8}){0,3}/?", fullmatch=True)


@given(scheme=st.sampled_from(["http", "https", "ws", "wss"]), host=_hosts, path=_paths)
def test_url_forms_of_one_server_agree(scheme, host, path):
    url = f"{scheme}://{host}{path}"
    root = http_base(url)
    assert not root.endswith("/")
    assert http_base(root) == root and http_base(ws_endpoint(url)) == root
    assert ws_endpoint(root) == ws_endpoint(url) == ws_endpoint(ws_endpoint(url))
    assert ws_endpoint(url).endswith("/ws") and ws_endpoint(url).split("://")[0] in ("ws", "wss")
    secure = scheme in ("https", "wss")
    assert root.startswith("https://" if secure else "http://")


def test_observation_text_prefers_named_then_prompt_like_fields():
    obs = {"metadata": {}, "question": "2 + 2 =", "task": {"tier": 0}, "score": None}
    assert observation_to_text(obs) == "2 + 2 ="
    assert observation_to_text(obs, field="task") == '{"tier": 0}'
    assert observation_to_text({"board": "x.o", "metadata": {}}) == "x.o"
    assert observation_to_text({"a": 1, "b": "x", "c": "y", "d": None}) == "a: 1\nb: x\nc: y"
    with pytest.raises(KeyError, match="'prompt'.*question"):
        observation_to_text(obs, field="prompt")


@given(reply=st.text())
def test_single_string_field_gets_the_raw_reply(reply):
    assert reply_to_action(reply, CHAIN_SUM_ACTION) == {"answer": reply}
    assert reply_to_action(reply, field="answer") == {"answer": reply}


def test_json_looking_reply_stays_text_for_a_string_field():
    assert reply_to_action('{"answer": 5}', CHAIN_SUM_ACTION) == {"answer": '{"answer": 5}'}
    assert reply_to_action("42", CHAIN_SUM_ACTION) == {"answer": "42"}


def test_non_string_and_multi_field_actions_decode_json():
    move = {"properties": {"metadata": {}, "action_id": {"type": "integer"}}, "required": ["action_id"]}
    assert reply_to_action("3", move) == {"action_id": 3}
    assert reply_to_action("```json\n7\n```", move) == {"action_id": 7}
    two = {"properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["x", "y"]}
    assert reply_to_action('```json\n{"x": 1, "y": 2}\n```', two) == {"x": 1, "y": 2}
    with pytest.raises(InvalidRequestError) as missing:
        reply_to_action('{"x": 1}', two)
    assert missing.value.errors[0]["loc"] == ["y"] and "y: Field required" in str(missing.value)
    with pytest.raises(InvalidRequestError, match="not a JSON"):
        reply_to_action("up and left", two)
    with pytest.raises(InvalidRequestError, match="not a JSON value"):
        reply_to_action("three", move)


def test_reply_to_action_needs_a_field_or_schema():
    with pytest.raises(ValueError, match="field= or action_schema="):
        reply_to_action("42")
    with pytest.raises(ValueError, match="'properties'"):
        reply_to_action("42", {"type": "object"})


def test_error_text_names_url_environment_and_what_to_do():
    err = UnknownSplitError("unknown split 'dev'", url="http://h:1", env_name="chain_sum", hint="use one of ['test', 'train']")
    assert str(err) == "unknown split 'dev' [url http://h:1, environment 'chain_sum']. use one of ['test', 'train']"
    assert isinstance(err, ValueError)


@pytest.mark.parametrize(
    "kwargs, message",
    [({"timeout": 0}, "timeout"), ({"max_sessions": 0}, "max_sessions"), ({"capacity_wait": -1}, "capacity_wait")],
)
def test_session_rejects_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        EpisodeSession("http://127.0.0.1:1", **kwargs)


def test_task_client_rejects_bad_settings():
    with pytest.raises(ValueError, match="retries"):
        TaskAPIClient("http://127.0.0.1:1", retries=-1)
    with pytest.raises(ValueError, match="env_name"):
        TaskAPIClient("http://127.0.0.1:1", env_name="")


@settings(max_examples=40, deadline=None)
@given(
    limit=st.integers(1, 5),
    holds=st.lists(st.integers(0, 3), min_size=1, max_size=25),
    new_limit=st.one_of(st.none(), st.integers(1, 5)),
)
def test_session_gate_never_exceeds_its_limit_and_serves_everyone(limit, holds, new_limit):
    """Sessions queue for slots: at most `limit` hold one at a time (the new limit once changed), all get one."""

    async def main():
        gate = _Gate(limit)
        active, peak, served = 0, 0, 0

        async def user(ticks: int):
            nonlocal active, peak, served
            await gate.acquire(timeout=10)
            active += 1
            peak = max(peak, active)
            for _ in range(ticks):
                await asyncio.sleep(0)
            active -= 1
            served += 1
            gate.release()

        users = [asyncio.ensure_future(user(t)) for t in holds]
        await asyncio.sleep(0)
        if new_limit is not None:
            gate.set_limit(new_limit)
        await asyncio.wait_for(asyncio.gather(*users), 10)
        return peak, served, gate.active

    peak, served, left = asyncio.run(main())
    assert served == len(holds) and left == 0
    assert peak <= max(limit, new_limit or limit)
