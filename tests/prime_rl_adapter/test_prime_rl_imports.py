"""The adapter package imports without prime-rl, and says what to do when prime-rl is missing."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from tests.support.waiting import HANG_GUARD_S


def test_core_imports_without_loading_prime_rl() -> None:
    code = (
        "import sys; from openenv_prime.prime_rl_adapter import SamplerCore, parse_kwargs; "
        "import openenv_prime.prime_rl_adapter.cli; "
        "print('prime_rl' in sys.modules, 'verifiers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_GUARD_S, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_the_prime_rl_class_without_prime_rl_names_the_fix() -> None:
    if importlib.util.find_spec("prime_rl") is not None:  # at run time: PRIME_RL_DIR adds it late
        pytest.skip("prime-rl is importable here")
    import openenv_prime.prime_rl_adapter as adapter

    with pytest.raises(ImportError, match="prime-rl does not import here.*patches/README.md"):
        adapter.OpenEnvPrimeSampler  # noqa: B018
