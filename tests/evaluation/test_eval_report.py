"""The eval's report, console and JSON alike: n/a (null) where nothing was scored, every warning the console prints
kept in the JSON, and the invalid actions per family. Played end to end (a real server, the CLI) in
tests/play/test_play_wild.py; here the report of results built by hand, as the runner builds them."""

from __future__ import annotations

from rich.console import Console

from openenv_prime.evaluation import EvalConfig
from openenv_prime.evaluation.report import family_table, report_dict, run_warnings
from openenv_prime.evaluation.result import TaskResult, scored_result


def _result(family: str, index: int, reward: float | None, stop: str, invalid: int = 0, error: str | None = None):
    return TaskResult(key=f"{family}/{index}", family=family, split="test", index=index, reward=reward,
                      success=bool(reward), reply="r", steps=1, done=stop == "done", truncated=stop == "max_steps",
                      invalid_actions=invalid, turns=1 + invalid, stop=stop, error=error)


def _eval(results):
    config = EvalConfig(base_url="http://127.0.0.1:9")
    return scored_result(config, results, sorted({r.family for r in results}), env_name="env", split="test",
                         family_field="level", choices=[], reconnects=0, warnings=["the server said so"], elapsed_s=1.0)


def _table(result) -> str:
    console = Console(width=200, record=True)
    console.print(family_table(result))
    return console.export_text()


def test_nothing_scored_reads_n_a_in_the_table_and_null_in_the_json_never_0():
    result = _eval([_result("0", 0, None, "error", error="step 1 failed inside the environment: boom"),
                    _result("1", 1, 1.0, "done", invalid=2), _result("1", 2, 0.0, "invalid_action", invalid=4)])
    document = report_dict(result)
    families = {f["family"]: f for f in document["families"]}
    assert (families["0"]["accuracy"], families["0"]["mean_reward"]) == (None, None)  # no episode of family 0 scored
    assert (families["1"]["accuracy"], families["1"]["invalid_actions"], document["invalid_actions"]) == (0.5, 6, 6)
    assert document["accuracy"] == 0.5 and result.accuracy == 0.5
    lines = _table(result).splitlines()
    header = next([cell.strip() for cell in line.split("┃")[1:-1]] for line in lines if line.count("┃") > 5)
    rows = {cells[0]: cells for cells in ([cell.strip() for cell in line.split("│")[1:-1]] for line in lines
                                          if line.count("│") > 5)}
    assert header[0] == "level" and "invalid actions" in header
    assert rows["0"][header.index("accuracy")] == "n/a" and rows["0"][header.index("mean reward")] == "n/a"
    assert rows["1"][header.index("invalid actions")] == "6" and rows["total"][header.index("accuracy")] == "0.500"
    none_scored = report_dict(_eval([_result("0", 0, None, "error", error="boom")]))
    assert (none_scored["accuracy"], none_scored["mean_reward"]) == (None, None)


def test_every_warning_the_console_prints_is_in_the_json_report():
    result = _eval([_result("0", 0, 0.0, "max_steps"), _result("0", 1, 0.0, "invalid_action", invalid=4),
                    _result("0", 2, None, "error", error="step 1 failed inside the environment: boom")])
    warnings = run_warnings(result)
    assert warnings[0] == "the server said so" and len(warnings) == 4
    assert any("truncated" in w for w in warnings) and any("ended on an invalid action" in w for w in warnings)
    assert any("failed inside the environment" in w and "boom" in w for w in warnings)
    assert report_dict(result)["warnings"] == warnings
