"""TRL's ``GRPOTrainer`` on OpenEnv servers, with this package's samplers choosing the tasks and its eval harness
evaluating in training. TRL, transformers and torch are imported here and nowhere else in the package.

How the sampler meets TRL (the notes of OpenEnv RFC 013, "Task sampling and in-training evaluation"): TRL takes
prompts from its dataset, so the dataset draws its rows from ``sample(n)`` (:mod:`.rows`), and the reward function,
which sees every completion of a generation batch before anything is filtered, calls ``update`` once per group
(:mod:`.rewards`). Rows are drawn a batch before they are generated (TRL's data loader reads ahead): rows drawn but
not scored are saved with the sampler in each checkpoint (:mod:`.callback`). ``shuffle_dataset`` must be off. On
several processes the sampler is replicated: every process draws the same rows and applies every group's update,
gathered from all processes (:mod:`.replicas`). Multi-step environments play through TRL's tool loop
(:mod:`.tools`).

Names load lazily, so importing the package does not import TRL.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "OpenEnvTRL": "integration",
    "OpenEnvTRLConfig": "config",
    "OpenEnvCallback": "callback",
    "TransformersPolicy": "policy",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"openenv_prime.trl.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'openenv_prime.trl' has no attribute {name!r}")
