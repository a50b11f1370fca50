"""OpenEnv Task API environments as a verifiers v1 taskset (`vf-eval openenv-prime`).

verifiers finds these through the top-level `openenv_prime.__all__`: one Taskset, one Env and
one Harness, which becomes the default harness of the env's `player` seat."""

from openenv_prime.verifiers_taskset.config import (
    OpenEnvEnvConfig,
    OpenEnvTaskConfig,
    OpenEnvTasksetConfig,
)
from openenv_prime.verifiers_taskset.env import OpenEnvEnv
from openenv_prime.verifiers_taskset.harness import OpenEnvChatHarness, OpenEnvChatHarnessConfig
from openenv_prime.verifiers_taskset.taskset import OpenEnvTask, OpenEnvTaskData, OpenEnvTaskset

__all__ = [
    "OpenEnvChatHarness",
    "OpenEnvChatHarnessConfig",
    "OpenEnvEnv",
    "OpenEnvEnvConfig",
    "OpenEnvTask",
    "OpenEnvTaskConfig",
    "OpenEnvTaskData",
    "OpenEnvTaskset",
    "OpenEnvTasksetConfig",
]
