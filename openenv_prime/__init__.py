"""openenv-prime: choose which task each GRPO group trains on, and run OpenEnv environments in common trainers.

verifiers discovers the taskset id ``openenv-prime`` by importing this module and reading ``__all__``.
The verifiers classes load lazily so that ``import openenv_prime.samplers`` stays standard-library only.
"""

__version__ = "0.1.0"

__all__ = ["OpenEnvTaskset", "OpenEnvEnv", "OpenEnvChatHarness"]


def __getattr__(name: str):
    if name in __all__:
        from openenv_prime import verifiers_taskset

        return getattr(verifiers_taskset, name)
    raise AttributeError(f"module 'openenv_prime' has no attribute {name!r}")
