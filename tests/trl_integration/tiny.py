"""A tiny random Llama built from a config (no Hub), a character tokenizer that knows every printable character, and
GRPOConfig settings for a few CPU steps: what every TRL test trains, in-process or under torchrun."""

from __future__ import annotations

import string
import json
from pathlib import Path


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


def save_tiny(folder: Path, chat_template: str | None = None) -> Path:
    """The tiny model and its tokenizer saved as a transformers directory, for scripts that load a model by path."""
    tokenizer = tiny_tokenizer(chat_template)
    tiny_model(tokenizer).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


class ScriptedModel:
    """A model whose replies a script writes from the prompt it was given (``script(prompt_text)``), in tokens, ending
    with the end of sequence: a random tiny model never calls a tool, so where a test needs the calls a model that
    reads its prompt would make, the weights are this script (the tokenizer, the chat template and TRL's parser are
    real)."""

    device = "cpu"
    training = False

    def __init__(self, tokenizer, script):
        self.tokenizer = tokenizer
        self.script = script

    def eval(self):
        return self

    def train(self, mode=True):
        return self

    def generate(self, input_ids, attention_mask, max_new_tokens, pad_token_id, **_):
        import torch

        tok = self.tokenizer
        rows = []
        for ids, mask in zip(input_ids.tolist(), attention_mask.tolist()):
            prompt = tok.decode([i for i, m in zip(ids, mask) if m], skip_special_tokens=False)
            reply = tok(self.script(prompt), add_special_tokens=False)["input_ids"][:max_new_tokens - 1]
            rows.append(ids + reply + [tok.eos_token_id])
        width = max(map(len, rows))
        return torch.tensor([r + [pad_token_id] * (width - len(r)) for r in rows])


def tool_call(name: str, **arguments) -> str:
    """A reply calling ``name`` as Qwen2.5's chat template writes tool calls (TRL parses them)."""
    return f'<tool_call>\n{json.dumps({"name": name, "arguments": arguments})}\n</tool_call><|im_end|>'
