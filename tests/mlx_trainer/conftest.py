"""Shared MLX fixtures: models built or converted once per test session in a temporary folder
(never in the user's real cache), so every MLX test loads through the real `mlx_lm.load` path."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing in these tests may reach for the Hub


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A random dim-64, 2-layer Llama with the default character vocabulary (seed 0)."""
    from openenv_prime.mlx_trainer.model.sources import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny")


@pytest.fixture(scope="session")
def smollm2_cache_dir(tmp_path_factory):
    """A cache folder holding SmolLM2-135M-Instruct converted to float32 (about 7 s, once)."""
    from openenv_prime.mlx_trainer.model.sources import smollm2_model_dir

    cache = tmp_path_factory.mktemp("cache")
    smollm2_model_dir(cache)
    return cache


@pytest.fixture(scope="session")
def smollm2_dir(smollm2_cache_dir):
    from openenv_prime.mlx_trainer.model.sources import smollm2_model_dir

    return smollm2_model_dir(smollm2_cache_dir)
