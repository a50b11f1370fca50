"""`openenv-prime eval`: accuracy per task family of any OpenAI-compatible model (or an in-process policy)
on an OpenEnv environment's Task API split; and in-training evaluation for any loop: an `EvalSchedule` and an
`EvalHarness` whose `maybe_run(step)` a loop calls after each optimizer step (the MLX trainer and the TRL callback
evaluate through it).

Names load lazily, so `openenv-prime --help` does not import httpx, websockets or pydantic.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "EvalConfig": "config",
    "EvalHarness": "harness",
    "EvalResult": "result",
    "EvalSchedule": "schedule",
    "FamilyScore": "result",
    "TaskResult": "result",
    "ModelEndpointError": "policy",
    "OpenAIPolicy": "policy",
    "Policy": "policy",
    "Reply": "policy",
    "run_eval": "runner",
    "run_eval_async": "runner",
    "choose_tasks": "selection",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"openenv_prime.evaluation.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'openenv_prime.evaluation' has no attribute {name!r}")
