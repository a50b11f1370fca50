"""`openenv-prime eval`: accuracy per task family of any OpenAI-compatible model (or an in-process policy)
on an OpenEnv environment's Task API split. The MLX trainer calls `run_eval` from its eval schedule.

Names load lazily, so `openenv-prime --help` does not import httpx, websockets or pydantic.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "EvalConfig": "config",
    "EvalResult": "result",
    "FamilyScore": "result",
    "TaskResult": "result",
    "ModelEndpointError": "policy",
    "OpenAIPolicy": "policy",
    "Policy": "policy",
    "run_eval": "runner",
    "run_eval_async": "runner",
    "choose_tasks": "selection",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"openenv_prime.evaluation.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'openenv_prime.evaluation' has no attribute {name!r}")
