"""The episode engine and its rules on their own: validation, the invalid-action flags, the reward of an episode the
environment ended for an invalid action, and the switches (flags off, replay off) on a real server
(`tests/support/rules_server.py`). That eval, taskset and trainer play alike is `tests/play/test_play_one_engine.py`."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from openenv_prime.client import EpisodeSession, TaskAPIClient
from openenv_prime.client.engine.episode import Episode, play
from openenv_prime.client.engine.episode_rules import DEFAULT_RULES, EpisodeRules
from openenv_prime.client.prompts.render import EpisodeProtocol
from tests.support import rules_script
from tests.support.rules_script import reply_to_messages


EPISODE_IDS = itertools.count()  # the server drops each episode id's socket once: every episode here gets a new id


@pytest.fixture(scope="module")
def rules_server(tmp_path_factory):
    with rules_script.rules_server(tmp_path_factory.mktemp("rules") / "server.log") as url:
        yield url


@pytest.mark.parametrize(("fields", "named"), [
    ({"max_steps": 0}, "max_steps"), ({"max_invalid_actions": -1}, "max_invalid_actions"),
    ({"max_steps": True}, "max_steps"), ({"reward_mode": "mean"}, "reward_mode 'mean'"),
    ({"reward_clip": (1.0, 0.0)}, "low > high"), ({"feedback": "Try again."}, "{problem}"),
    ({"invalid_flags": "invalid_move"}, "list of key names"),
])
def test_bad_rules_are_refused_by_name(fields, named):
    with pytest.raises(ValueError, match=named.replace("{", r"\{").replace("}", r"\}")):
        EpisodeRules(**fields)


def test_defaults_and_feedback_text():
    assert (DEFAULT_RULES.max_steps, DEFAULT_RULES.max_invalid_actions, DEFAULT_RULES.reward_mode) == (16, 3, "sum")
    assert DEFAULT_RULES.feedback_text("Your reply was empty.") == "Your reply was empty. Try again; reply with only the action."
    assert DEFAULT_RULES.feedback_text("it is too long ") == "it is too long. Try again; reply with only the action."
    assert EpisodeRules(feedback="Nope: {problem}").feedback_text("empty") == "Nope: empty."


def test_invalid_flags_are_found_at_depth_and_only_when_true():
    rules = DEFAULT_RULES
    textarena_state = {"raw_state": {"game_info": {"0": {"invalid_move": True, "reason": "Invalid Move"}}}}
    assert rules.flags_invalid({}, {"invalid_action": True}) and rules.flags_invalid(textarena_state)
    assert rules.flags_invalid({"messages": [{"invalid_move": True}]})
    assert not rules.flags_invalid({"invalid_move": False}, {"invalid_action": "yes"}, {"note": "invalid_move"})
    assert not rules.flags_invalid({"a": {"b": {"c": {"d": {"e": {"invalid_move": True}}}}}})  # deeper than a state
    assert not EpisodeRules(invalid_flags=()).flags_invalid({"invalid_move": True})
    assert EpisodeRules(invalid_flags=("illegal",)).flags_invalid({"illegal": True})


def test_an_episode_the_environment_ended_for_an_invalid_action_scores_what_it_earned():
    episode = Episode(EpisodeProtocol(None, action_field="answer"), DEFAULT_RULES, {}, open_session=EpisodeSession)
    episode.step_rewards, episode.done = [None], True
    episode.stop = "done"
    assert episode.reward is None  # ended by the environment, unscored: left out
    episode.stop = "invalid_action"
    assert episode.reward == 0.0  # ended for an invalid action: a failure, never hidden as unscored


def _play(url: str, task: str, rules: EpisodeRules) -> Episode:
    """Play one rules_server task with the script's replies."""
    return _played(url, task, rules)[0]


def _played(url: str, task: str, rules: EpisodeRules, script: list[str] | None = None) -> tuple[Episode, EpisodeSession]:
    """Play one rules_server task with the script's replies (or ``script``'s, the last repeated); the episode and the
    session it started on."""
    with TaskAPIClient(url) as api:
        index = [spec["id"] for spec in api.get_task_range("test")].index(task)
        protocol = EpisodeProtocol(api.action_schema())

    def reply(chat):
        if script is None:
            return reply_to_messages(chat)
        return script[min(sum(m["role"] == "assistant" for m in chat), len(script) - 1)]

    async def replies(active):
        return [reply(ep.chat) for ep in active]

    async def go():
        episode = Episode(protocol, rules, {"split": "test", "index": index}, episode_id=f"unit-{task}-{next(EPISODE_IDS)}",
                          open_session=lambda: EpisodeSession(url))
        first = EpisodeSession(url)
        try:
            await episode.start(first)
            await play([episode], replies)
        finally:
            await episode.session.close()
            await first.close()
        return episode, first

    return asyncio.run(go())


def test_flags_switched_off_leave_a_format_error_ending_as_done(rules_server):
    flagged = _play(rules_server, "strict", EpisodeRules())
    assert (flagged.stop, flagged.invalid_actions, flagged.reward) == ("invalid_action", 2, 0.0)
    plain = _play(rules_server, "strict", EpisodeRules(invalid_flags=()))
    assert (plain.stop, plain.invalid_actions, plain.steps, plain.reward) == ("done", 0, 2, 0.0)
    unasked = _play(rules_server, "strict-state", EpisodeRules())  # textarena's flag is only in its state
    assert (unasked.stop, unasked.invalid_actions) == ("done", 0)
    asked = _play(rules_server, "strict-state", EpisodeRules(invalid_flags_in_state=True))
    assert (asked.stop, asked.invalid_actions) == ("invalid_action", 1)


def test_a_dropped_socket_is_replayed_unless_replay_is_off(rules_server):
    replayed = _play(rules_server, "flaky", EpisodeRules())
    assert (replayed.reconnects, replayed.steps, replayed.stop) == (1, 3, "done")
    assert replayed.reward == pytest.approx(2 / 3)
    assert [m["content"] for m in replayed.chat if m["role"] == "user"] == replayed.shown  # the model saw no seam
    unreplayed = _play(rules_server, "flaky", EpisodeRules(replay=False))  # the episode ends, not the run
    assert (unreplayed.stop, unreplayed.reward, unreplayed.steps) == ("error", None, 1)
    assert "1011" in unreplayed.error and "step 2 failed inside the environment" in unreplayed.error


def _fed_back(episode: Episode) -> list[str]:
    """The user messages after the first: what the model read after each reply."""
    return [m["content"] for m in episode.chat if m["role"] == "user"][1:]


def test_an_error_answering_an_action_is_the_model_s_to_read_and_the_episode_goes_on(rules_server):
    fixed, first = _played(rules_server, "dimension", EpisodeRules())  # finrl_env's check: "0.5,0.5", then "0.5"
    assert (fixed.stop, fixed.reward, fixed.steps, fixed.invalid_actions, fixed.error) == ("done", 1.0, 1, 1, None)
    assert _fed_back(fixed) == ["The environment answered that action with an error: Action dimension mismatch: "
                                "expected 1, got 2. Actions should match config['action_space'] (= stock_dim). Try "
                                "again; reply with only the action."]
    assert fixed.session is first  # the session stayed usable: the episode went on on it
    varied, _ = _played(rules_server, "dimension", EpisodeRules(), ["1,2", "1,2,3", "1,2,3,4", "1,2", "1,2"])
    assert (varied.stop, varied.reward, varied.invalid_actions) == ("invalid_action", 0.0, 4)  # errors that differ: the model's
    assert "got 3" in _fed_back(varied)[1] and "got 4" in _fed_back(varied)[2]


def test_errors_answering_every_action_alike_are_the_environment_s_failure(rules_server):
    broken, first = _played(rules_server, "broken", EpisodeRules())  # four different replies, one same error
    assert (broken.stop, broken.reward, broken.steps, broken.invalid_actions, broken.alike) == ("error", None, 0, 0, 4)
    assert "EXECUTION_ERROR" in broken.error and "'StepResult' object has no attribute 'model_dump'" in broken.error
    assert "as it answered all 4 actions since its last accepted step" in broken.error
    assert all("'StepResult' object has no attribute 'model_dump'" in text for text in _fed_back(broken))  # read 3 times
    assert broken.session is not first and broken.reconnects == 0  # whoever reuses the slot gets a fresh socket
    crashed, _ = _played(rules_server, "crash", EpisodeRules())  # one accepted step, then errors alike
    assert (crashed.stop, crashed.reward, crashed.steps, crashed.invalid_actions) == ("error", None, 1, 0)
    at_once, _ = _played(rules_server, "broken", EpisodeRules(max_invalid_actions=0))
    assert (at_once.stop, at_once.turns, at_once.alike) == ("error", 1, 1) and "as it answered" not in at_once.error
    mixed, _ = _played(rules_server, "broken", EpisodeRules(), ["a", "nope", "b", "c", "d"])  # a rejection between
    assert (mixed.stop, mixed.reward, mixed.invalid_actions) == ("invalid_action", 0.0, 4)


def test_a_driver_that_stops_right_after_an_error_left_the_model_no_turn_to_read_it(rules_server):
    """TRL's text mode gives each episode one reply: an error answering it is called as at the invalid limit."""
    unread, _ = _played(rules_server, "broken", EpisodeRules(), ["a", None])
    assert (unread.stop, unread.reward, unread.invalid_actions, unread.alike) == ("error", None, 0, 1)
    read, _ = _played(rules_server, "broken", EpisodeRules(), ["a", "", None])  # it read the error and replied nothing
    assert (read.stop, read.reward, read.invalid_actions) == ("stopped", 0.0, 2)
    rejected, _ = _played(rules_server, "broken", EpisodeRules(), ["nope", None])  # a rejection is the action's own
    assert (rejected.stop, rejected.reward, rejected.invalid_actions) == ("stopped", 0.0, 1)


def test_a_long_error_reaches_the_model_cut_with_its_start_and_end(rules_server):
    from tests.support.rules_server import TRACEBACK

    verbose, _ = _played(rules_server, "verbose", EpisodeRules())  # "true" draws a 9,650-character traceback, then "ok"
    (said,) = _fed_back(verbose)
    assert (verbose.stop, verbose.reward, verbose.invalid_actions) == ("done", 1.0, 1)
    assert said.startswith("The environment answered that action with an error: Traceback (most recent call last):")
    assert said.endswith("NameError: The variable `true` is not defined. Try again; reply with only the action.")
    left_out = int(said.split("\n[... ")[1].split(" characters of the error left out")[0].replace(",", ""))
    assert len(said) <= 4_000 + 100 and left_out + 4_000 >= len(TRACEBACK)  # the 4,000-character observation budget


def test_a_replayed_episode_re_sends_the_actions_the_environment_answered_with_an_error(rules_server):
    replayed, _ = _played(rules_server, "dimension", EpisodeRules(), ["0.5,0.5", "drop"])  # the server drops at "drop"
    assert (replayed.reconnects, replayed.stop, replayed.reward, replayed.invalid_actions) == (1, "done", 1.0, 1)
    assert replayed.refused == [True, False]


class _Ended:
    def __init__(self, stop, error=None, alike=0):
        self.stop, self.error, self.finished, self.alike = stop, error, True, alike


def test_an_error_streak_stops_a_run_only_when_every_recent_episode_failed():
    from openenv_prime.client.engine.failures import EnvironmentFailing, ErrorStreak

    streak = ErrorStreak(limit=3)
    streak.record([_Ended("error", "boom 1"), _Ended("error", "boom 2"), _Ended("done")])  # a success breaks the run
    streak.record([_Ended("error", "boom 3"), _Ended("max_steps"), _Ended("error", "boom 4")])
    assert (streak.count, streak.total) == (1, 4)
    with pytest.raises(EnvironmentFailing, match=r"last 3 episodes in a row.*its last error: boom 6"):
        streak.record([_Ended("error", "boom 5"), _Ended("error", "boom 6")])
    with pytest.raises(ValueError, match="at least 1"):
        ErrorStreak(limit=0)


def test_a_stopped_run_says_whether_the_environment_failed_on_its_own_or_answered_every_action_alike():
    from openenv_prime.client.engine.failures import EnvironmentFailing, ErrorStreak

    def verdict(*episodes):
        with pytest.raises(EnvironmentFailing) as stopped:
            ErrorStreak(limit=2).record(episodes)
        return stopped.value.message

    on_its_own = verdict(_Ended("error", "socket closed"), _Ended("error", "timed out"))
    assert "fails on its own, whatever the model replies; its last error: timed out" in on_its_own
    alike = verdict(_Ended("error", "dimension 1", alike=4), _Ended("error", "dimension 2", alike=4))
    assert "in every one it answered every action sent with one same error" in alike
    assert "or the replies repeat one mistake that the error names" in alike and alike.endswith("dimension 2")
    both = verdict(_Ended("error", "timed out"), _Ended("error", "dimension", alike=4))
    assert "in 1 of them it answered every action sent with one same error, and in the rest it failed on its own" in both
    streak = ErrorStreak(limit=2)
    streak.record([_Ended("error", "x", alike=4), _Ended("done")])  # a played episode resets the count of both kinds
    assert (streak.count, streak.alike) == (0, 0)


def test_replies_must_answer_every_open_episode(rules_server):
    async def none_at_all(active):
        return []

    async def go():
        with TaskAPIClient(rules_server) as api:
            protocol = EpisodeProtocol(api.action_schema())
        episode = Episode(protocol, DEFAULT_RULES, {"split": "test", "index": 0}, open_session=lambda: EpisodeSession(rules_server))
        try:
            await episode.start(EpisodeSession(rules_server))
            await play([episode], none_at_all)
        finally:
            await episode.session.close()

    with pytest.raises(ValueError, match="returned 0 replies for 1 episodes"):
        asyncio.run(go())


@pytest.mark.parametrize(("observation", "metadata", "failed"), [
    ({"stdout": "", "stderr": "Traceback (most recent call last):\n  ...\nNameError: x", "exit_code": 1}, {}, True),
    ({"stderr": '  File "<code>", line 1\n    print(2 +\nSyntaxError: incomplete input', "exit_code": 1}, None, True),
    ({"message": "ok"}, {"error": "unknown action CallToolAction"}, True),
    ({"exception": "ZeroDivisionError: division by zero"}, {}, True),
    ({"stdout": "5\n", "stderr": "", "exit_code": 0}, {}, False),
    ({"stderr": "FAILED test_sum", "exit_code": 1}, {}, False),  # a failed test: a wrong answer, not an invalid action
    ({"stderr": "Traceback (most recent call last):", "exit_code": 0}, {}, False),  # a warning printed, exit 0
    ({"error": "", "exception": None}, {"error": {"message": "tool failed"}}, False),  # empty, or an object (MCP)
    ({"state": {"error": "deep in a game's state"}}, {}, False),  # the top level only
    ({"success": True, "tool_result": {"text": "summary is required", "isError": True}}, {}, True),  # calendar_env
    ({"success": True, "tool_result": {"text": "created", "isError": False}}, {}, False),
    ({"game": {"round": {"is_error": True}}}, {}, False),  # one level down only
])
def test_an_observation_that_reports_a_failure_marks_the_step_invalid(observation, metadata, failed):
    assert EpisodeRules().reports_error(observation, metadata) is failed
    assert EpisodeRules(invalid_errors=False).reports_error(observation, metadata) is False
