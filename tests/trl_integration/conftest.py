"""TRL fixtures: a tiny random Llama built from a config (no Hub), with a character tokenizer that knows every
printable character, and the tests' OpenEnv servers. TRL, transformers and torch are real; the model is tiny."""

from __future__ import annotations

import os
import string
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

pytest.importorskip("trl", reason="TRL is not installed (the `trl` extra)")

TESTS = Path(__file__).resolve().parents[1]


def tiny_tokenizer(chat_template: str | None = None):
    """One token per printable character (so any text round-trips), the trainer's tiny chat template by default."""
    from openenv_prime.mlx_trainer.model.sources import ROLE_TOKENS, SPECIAL_TOKENS, char_tokenizer

    tokenizer = char_tokenizer([*SPECIAL_TOKENS, *ROLE_TOKENS, *dict.fromkeys(string.printable)])
    if chat_template is not None:
        tokenizer.chat_template = chat_template
    return tokenizer


def tiny_model(tokenizer, seed: int = 0):
    """A random dim-32, 2-layer Llama for ``tokenizer`` (the same seed gives the same weights)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, intermediate_size=64,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=4096,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=True)
    return LlamaForCausalLM(config)


def grpo_args(out: Path, **overrides):
    """A GRPOConfig for a few CPU steps: 2 tasks x 4 rollouts per step, 6 new tokens, nothing reported."""
    from trl import GRPOConfig

    settings = dict(output_dir=str(out), num_generations=4, per_device_train_batch_size=8, max_steps=4,
                    max_completion_length=6, learning_rate=1e-3, logging_steps=1, save_steps=2, report_to=[],
                    use_cpu=True, bf16=False, shuffle_dataset=False, ignore_data_skip=True, disable_tqdm=True,
                    gradient_checkpointing=False, seed=0)
    return GRPOConfig(**{**settings, **overrides})


@pytest.fixture(scope="module")
def gold_fields_server(tmp_path_factory):
    """tests/play/gold_server.py's `fields` environment: the gold answer in every observation shape we know."""
    from tests.play.gold_server import gold_serving

    with gold_serving("fields", tmp_path_factory.mktemp("gold")) as url:
        yield url


def _play_server(tmp_path_factory, script: str, *args: str):
    """One of tests/play's servers on a free port, 16 sessions, until the test module is done."""
    from tests.support.processes import free_port, serving

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with serving([sys.executable, str(TESTS / "play" / script), str(port), "16", *args], f"{url}/health",
                 tmp_path_factory.mktemp(script.removesuffix(".py")) / "server.log"):
        yield url


@pytest.fixture(scope="module")
def grid_world_server(tmp_path_factory):
    """tests/play/grid_server.py: an Enum action (UP/DOWN/LEFT/RIGHT), several steps per episode."""
    yield from _play_server(tmp_path_factory, "grid_server.py")


@pytest.fixture(scope="module")
def coding_server(tmp_path_factory):
    """tests/play/coding_server.py: coding_env's free-text `code` action; a failing program returns its traceback."""
    yield from _play_server(tmp_path_factory, "coding_server.py")


@pytest.fixture(scope="module")
def instructed_server(tmp_path_factory):
    """tests/play/instructed_server.py: its own system prompt (an observation field) asks for <answer> tags."""
    yield from _play_server(tmp_path_factory, "instructed_server.py", "field")
