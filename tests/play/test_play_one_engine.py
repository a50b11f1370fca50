"""Eval scores as training does: the same scripted episodes on one real server (`tests/support/rules_server.py`)
through `openenv-prime eval` (a scripted policy), the verifiers taskset (real verifiers objects, a scripted
OpenAI-compatible server) and the trainer's rollout runner (a real tokenizer and token transcripts, generation
scripted) give the same rewards, invalid-action counts and step counts, and show the model the same texts.

The script covers invalid replies (empty, rejected by the server, past the limit), unscored steps, an episode the
environment ends unscored, a step-limit cutoff, an environment that ends an episode for format errors (flagged
in metadata, or only in its state as textarena does), a socket the server drops mid-episode (replayed), errors
answering an action (the model reads them, a long one cut, and goes on), and an environment that answers every
action with one same error (the episode ends unscored with stop "error"; the others go on).
"""

from __future__ import annotations

import asyncio
import string
from pathlib import Path

import httpx
import pytest

from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer
from tests.support import rules_script
from tests.support.rules_script import EXPECTED, RULES, TASK, reply, reply_to_messages

# reward_mode "last" clipped into [0, 0.5]: the rewards EXPECTED's episodes then earn
LAST_CLIPPED = {"onestep-a": 0.5, "onestep-b": 0.0, "delayed": 0.5, "flaky": 0.5, "unscored": None, "endless": 0.25,
                "strict": 0.0, "strict-state": 0.0, "crash": None, "broken": None, "dimension": 0.5, "verbose": 0.5}
# mode -> (reward_mode, reward_clip, expected rewards, a run number: the server drops each episode id's socket once)
MODES = {"sum": ("sum", None, {task: row[0] for task, row in EXPECTED.items()}, 1),
         "last-clipped": ("last", (0.0, 0.5), LAST_CLIPPED, 2)}


@pytest.fixture(scope="module")
def rules_server(tmp_path_factory):
    with rules_script.rules_server(tmp_path_factory.mktemp("rules") / "server.log") as url:
        yield url


@pytest.fixture(scope="module")
def printable_model_dir(tmp_path_factory):
    """A tiny model whose character tokenizer knows every printable character, so transcripts decode exactly."""
    from openenv_prime.mlx_trainer.model.sources import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "printable", vocab=string.printable)


def dropped(url: str) -> list[str]:
    return httpx.get(f"{url}/dropped", timeout=10).json()


def user_texts(messages: list[dict]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "user"]


def by_task(rows: dict[str, tuple]) -> dict[str, tuple]:
    return {task: (None if r[0] is None else pytest.approx(r[0]), *r[1:]) for task, r in rows.items()}


def via_eval(url: str, mode: str, clip, run: int) -> tuple[dict, dict]:
    from openenv_prime.evaluation import EvalConfig, run_eval

    class ScriptedPolicy:
        def __init__(self):
            self.seen: dict[str, list[dict]] = {}

        async def complete(self, prompts):
            for messages in prompts:
                self.seen[TASK.search(user_texts(messages)[0]).group(1)] = messages
            return [reply_to_messages(messages) for messages in prompts]

    policy = ScriptedPolicy()
    config = EvalConfig(base_url=url, family_field="kind", per_family=8, seed=run, reward_mode=mode, reward_clip=clip, **RULES)
    result = run_eval(config, policy)
    rows = {r.key: (r.reward, r.invalid_actions, r.steps, r.stop) for r in result.results}
    return rows, {task: user_texts(messages) for task, messages in policy.seen.items()}


def via_taskset(url: str, mode: str, clip) -> tuple[dict, dict]:
    from tests.verifiers_taskset.helpers import make_env, run_episodes

    stops = {"openenv_done": "done", "openenv_max_steps": "max_steps", "openenv_invalid_action": "invalid_action",
             "openenv_error": "error"}
    server = ScriptedOpenAIServer(lambda request: reply_to_messages(request["messages"]))
    with server as model_url:
        env = make_env(url, family_field="kind", task={"reward_mode": mode, "reward_clip": clip}, **RULES)
        tasks = list(env.taskset)
        episodes = asyncio.run(run_episodes(env, tasks, model_url))
    rows = {}
    for task, episode in zip(tasks, episodes):
        (trace,) = episode.traces
        assert episode.ok, trace.errors
        score = trace.rewards.get("openenv_return")
        rows[task.data.id] = (None if score is None else score.score, int(trace.metrics["openenv_invalid_actions"]),
                              int(trace.metrics["openenv_steps"]), stops[trace.stop_condition])
    seen = {}
    for request in server.requests:
        seen[TASK.search(user_texts(request["messages"])[0]).group(1)] = user_texts(request["messages"])
    return rows, seen


def via_trainer(url: str, mode: str, clip, model_dir: Path, run: int) -> tuple[dict, dict]:
    from mlx_lm import load

    from openenv_prime.client import TaskAPIClient, load_sampler_tasks
    from openenv_prime.client.engine.episode_rules import EpisodeRules
    from openenv_prime.mlx_trainer.rollouts.generation import Completion
    from openenv_prime.mlx_trainer.rollouts.runner import EpisodeRunner, Renderer
    from openenv_prime.mlx_trainer.worker import MainThreadMLX

    model, tokenizer = load(str(model_dir))
    assistant = tokenizer.convert_tokens_to_ids("<|assistant|>")

    def scripted(model, tokenizer, prompts, *, max_tokens, temperature, stop):
        """Replies from the decoded token sequence the model would be given: the task it names, the replies so far."""
        out = []
        for prompt in prompts:
            text = reply(TASK.search(tokenizer.decode(prompt)).group(1), prompt.count(assistant) - 1)
            out.append(Completion(list(tokenizer.encode(text, add_special_tokens=False)) + [tokenizer.eos_token_id], text, True))
        return out

    with TaskAPIClient(url) as api:
        schema = api.action_schema()
        tasks = load_sampler_tasks(api, "test", family_field="kind")
    mlx = MainThreadMLX()

    async def go():
        runner = EpisodeRunner(model, Renderer(tokenizer, action_schema=schema), mlx, url, max_sessions=8, max_new_tokens=16,
                               temperature=0.0, rules=EpisodeRules(reward_mode=mode, reward_clip=clip, **RULES),
                               generator=scripted)
        try:
            return (await runner.play(tasks, 1, step=run)).groups
        finally:
            await runner.close()

    groups = mlx.drive(go())
    rows, sequences = {}, {}
    for task, (rollout,) in zip(tasks, groups):
        rows[task.spec["id"]] = (rollout.reward, rollout.invalid_actions, rollout.steps)
        (sequence,) = rollout.sequences  # short episodes: never cut by the prompt budget
        sequences[task.spec["id"]] = tokenizer.decode(sequence.tokens)
    return rows, sequences


@pytest.mark.parametrize("mode", MODES)
def test_eval_taskset_and_trainer_score_the_same_episodes_alike(rules_server, printable_model_dir, mode):
    reward_mode, clip, rewards, run = MODES[mode]
    expected = {task: (rewards[task], *row[1:]) for task, row in EXPECTED.items()}
    before = dropped(rules_server)
    eval_rows, eval_seen = via_eval(rules_server, reward_mode, clip, run)
    after_eval = dropped(rules_server)
    taskset_rows, taskset_seen = via_taskset(rules_server, reward_mode, clip)
    after_taskset = dropped(rules_server)
    trainer_rows, trainer_sequences = via_trainer(rules_server, reward_mode, clip, printable_model_dir, run)
    after_trainer = dropped(rules_server)

    assert eval_rows == by_task(expected)
    assert taskset_rows == by_task(expected)
    assert trainer_rows == by_task({task: row[:3] for task, row in expected.items()})
    # each consumer lost the flaky task's socket once and replayed it, which changed nothing above
    assert [len(after_eval) - len(before), len(after_taskset) - len(after_eval), len(after_trainer) - len(after_taskset)] == [1, 1, 1]
    assert after_eval[-1].startswith(f"eval-s{run}-test-") and after_trainer[-1].startswith(f"train-{run}-test-")
    # the model was shown the same observations and the same feedback, turn by turn, by all three
    assert taskset_seen == eval_seen
    for task, texts in eval_seen.items():
        sequence, at = trainer_sequences[task], 0
        for text in texts:
            at = sequence.index(text, at) + len(text)
    feedback = eval_seen["onestep-a"][1:]
    assert feedback[0] == "Your reply was empty. Try again; reply with only the action."
    assert feedback[1] == ("Your reply is not a valid action: the reply does not fit the action schema: answer: "
                           "'far too long reply' is too long. Try again; reply with only the action.")
    assert feedback[2].startswith("The environment rejected that action:") and "'nope' is not an answer" in feedback[2]
    assert "task strict: invalid move, reply like [3]" in eval_seen["strict"]
    # an error answering an action is the model's next message (finrl_env's check); a long one is cut, its end kept
    assert eval_seen["dimension"][1].startswith("The environment answered that action with an error: Action dimension "
                                                "mismatch: expected 1, got 2.")
    assert "characters of the error left out" in eval_seen["verbose"][1]
    assert eval_seen["verbose"][1].endswith("NameError: The variable `true` is not defined. Try again; reply with only the action.")
