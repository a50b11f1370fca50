"""Reading run directories, for every study: a run's step and eval lines (one per step, as
`openenv_prime.evaluation.runlog.read_log` reads RUN/log.jsonl), whether it finished, the JSON files a study writes
beside a run (bench.json, TRL's summary.json), and a comparison's runs, OUT/seedN/NAME/, as its reports take them.

A later line for the same step replaces the earlier one (a resumed run logs again the step its checkpoint did not
hold), and a torn last line (a killed run) is left out, as `read_log` does for the package's own reports.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from openenv_prime.evaluation.runlog import log_file, read_log


def finished(run: Path) -> bool:
    """True when the run directory holds a finished run (its latest checkpoint says so)."""
    from openenv_prime.mlx_trainer.training.checkpoint import latest_checkpoint

    last = latest_checkpoint(run)
    return last is not None and json.loads((last / "state.json").read_text()).get("finished", False)


def records(run: Path) -> tuple[list[dict], list[dict]]:
    """The step lines and the eval lines of RUN/log.jsonl, one per step, in the order the steps were first logged."""
    log = read_log(run)
    return list(log.steps.values()), list(log.evals.values())


def step_lines(path: Path) -> list[dict]:
    """One line per step: the step lines of an MLX run (its directory or its log.jsonl), or else the lines without a
    type of a JSONL file of flat metric dicts, one per step, as prime-rl's orchestrator logs the adapter's
    ``metrics()`` (a line with the step of an earlier one replaces it)."""
    steps = list(read_log(path).steps.values())
    if steps:
        return steps
    lines = [json.loads(line) for line in log_file(path).read_text().splitlines() if line.strip()]
    flat = [line for line in lines if "type" not in line]
    return list({line.get("step", i): line for i, line in enumerate(flat)}.values())


def run_json(run: Path, name: str, default: Any = None) -> Any:
    """RUN/NAME parsed; ``default`` where one is given and the file is not there (a run this study did not time)."""
    path = Path(run) / name
    if default is not None and not path.is_file():
        return default
    return json.loads(path.read_text())


def seed_runs(out: Path, name: str = "*") -> list[tuple[int, Path]]:
    """(seed, run directory) of every OUT/seedN/NAME/ that holds a log.jsonl, in the order of their paths."""
    return [(int(log.parent.parent.name.removeprefix("seed")), log.parent)
            for log in sorted(Path(out).glob(f"seed*/{name}/log.jsonl"))]


def baseline_eval(out: Path) -> dict | None:
    """The step-0 eval of a comparison (the untrained model, greedy: the same in every run that made one); None
    before any run made it. Refuses runs whose step-0 evals differ: they would not be the same model and questions."""
    found = None
    for _, run in seed_runs(out):
        for record in records(run)[1]:
            if record["step"] == 0:
                if found is not None and record["accuracy"] != found["accuracy"]:
                    raise SystemExit(f"{run / 'log.jsonl'}: its step-0 eval differs from another run's in {out}: not one "
                                     "comparison")
                found = record
    return found


def load_runs(out: Path, names: list[str]) -> dict[str, dict[int, dict]]:
    """A comparison's runs: run directory name (a sampler's) -> seed -> its step lines, its eval lines (the
    comparison's one step-0 eval first where the run did not make it), whether it finished, and its bench.json parts
    (wall and CPU seconds, load average). A run without a step or an eval yet is left out."""
    runs: dict[str, dict[int, dict]] = {}
    baseline = baseline_eval(out)
    for name in names:
        for seed, run in seed_runs(out, name):
            steps, evals = records(run)
            if baseline is not None and (not evals or evals[0]["step"] != 0):
                evals.insert(0, baseline)  # the comparison's one step-0 eval
            if not steps or not evals:
                continue
            runs.setdefault(name, {})[seed] = {"steps": steps, "evals": evals, "finished": finished(run),
                                               "bench": run_json(run, "bench.json", {"parts": []})["parts"]}
    return runs
