"""An environment that states its reply format in its own system prompt (an observation field, or its `/splits`
entry) is scored as its instructions say: a policy that reads only its prompt finds them in the system prompt and
scores every task, as a scripted oracle does; a bare correct answer scores nothing. Played through `openenv-prime
eval` with its default system prompt, which the environment's replaces."""

from __future__ import annotations

import re

import pytest

from openenv_prime.evaluation import EvalConfig, OpenAIPolicy, run_eval
from openenv_prime.evaluation.config import DEFAULT_SYSTEM_PROMPT
from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer, last_user_text

QUESTION = re.compile(r"What is (\d+) \+ (\d+)\?")
TAGS = re.compile(r"<(\w+)></\1>")


def sum_of(request: dict) -> int:
    a, b = QUESTION.search(last_user_text(request)).groups()
    return int(a) + int(b)


def prompt_reader(request: dict) -> str:
    """The sum, in the tags the system prompt names (bare when it names none)."""
    system = next((m["content"] for m in request["messages"] if m["role"] == "system"), "")
    tags = TAGS.search(system)
    return f"<{tags.group(1)}>{sum_of(request)}</{tags.group(1)}>" if tags else str(sum_of(request))


def scores(url: str, rule) -> tuple[list[float], list[dict]]:
    model = ScriptedOpenAIServer(rule)
    with model as model_url:
        result = run_eval(EvalConfig(base_url=url, family_field=None, check_reset=False), OpenAIPolicy(model_url, "scripted"))
    return [r.reward for r in result.results], model.requests


@pytest.mark.parametrize("where", ["field", "declared"])
def test_a_prompt_reader_scores_as_the_oracle_where_the_environment_states_its_format(play_servers, where):
    url = play_servers("instructed_server.py", "0.4.1", where)
    read, requests = scores(url, prompt_reader)
    known, _ = scores(url, lambda request: f"<answer>{sum_of(request)}</answer>")
    bare, _ = scores(url, lambda request: str(sum_of(request)))
    assert read == known == [1.0] * 4 and bare == [0.0] * 4
    for request in requests:
        system, user = request["messages"][0]["content"], last_user_text(request)
        assert "<answer></answer>" in system and DEFAULT_SYSTEM_PROMPT not in system
        assert user.startswith("What is") and "answer>" not in user  # not shown twice
