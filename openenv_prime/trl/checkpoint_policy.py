"""A saved transformers checkpoint as an eval policy, for `openenv-prime eval --model-path DIR` (no model server).

DIR is what TRL writes: a model directory (``config.json``), a PEFT adapter (``adapter_config.json``: its base model,
named there, is loaded first, offline, then the adapter over it), or an ``output_dir`` whose newest ``checkpoint-N``
is taken. The replies come from :class:`~openenv_prime.trl.policy.TransformersPolicy`, which renders prompts with the
tokenizer's chat template as ``GRPOTrainer`` and the in-training evals do, so the same weights answer the same.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openenv_prime.trl.policy import TransformersPolicy

TRL_MISSING = "--model-path needs transformers and torch (and peft for an adapter): pip install \"openenv-prime[trl]\""
"""What to install, told where the imports fail."""
_CHECKPOINT = re.compile(r"checkpoint-(\d+)")


@dataclass(frozen=True)
class CheckpointModel:
    """Where the weights were found: the model directory, the base model under an adapter (None without one), and
    notes for the user (which checkpoint of an output directory was taken)."""

    path: Path
    base: str | None = None
    notes: list[str] = field(default_factory=list)

    def about(self) -> dict[str, Any]:
        """The report's account of the model."""
        return {"path": str(self.path), **({"base_model": self.base, "adapter": True} if self.base else {})}


def find_checkpoint(path: str | Path) -> CheckpointModel:
    """The model ``path`` names (see the module doc); a clear error where it names none."""
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"--model-path {folder} is not a directory; pass a transformers model directory, a "
                                "TRL checkpoint (output_dir/checkpoint-N) or a TRL output_dir")
    notes = []
    if not _is_model(folder):
        numbered = sorted((int(m.group(1)), p) for p in folder.iterdir()
                          if (m := _CHECKPOINT.fullmatch(p.name)) and _is_model(p))
        if not numbered:
            raise FileNotFoundError(f"--model-path {folder} holds no model (no config.json or adapter_config.json) and "
                                    "no checkpoint-N folder with one; pass the folder trainer.save_model() or a "
                                    "checkpoint wrote")
        folder = numbered[-1][1]
        notes.append(f"--model-path: {path} is an output directory; evaluating its newest checkpoint, {folder.name}")
    adapter = folder / "adapter_config.json"
    if not adapter.is_file():
        return CheckpointModel(folder, notes=notes)
    base = json.loads(adapter.read_text()).get("base_model_name_or_path")
    if not base:
        raise ValueError(f"{adapter} names no base model (base_model_name_or_path); the adapter cannot be loaded "
                         "without the model it was trained on")
    return CheckpointModel(folder, base, notes)


def _is_model(folder: Path) -> bool:
    return (folder / "config.json").is_file() or (folder / "adapter_config.json").is_file()


def load_checkpoint_policy(found: CheckpointModel, *, max_new_tokens: int, batch_size: int = 32) -> TransformersPolicy:
    """The checkpoint's model (its saved dtype, on the GPU where there is one) and tokenizer, offline, as a greedy
    policy; the tokenizer is the checkpoint's own where it saved one (TRL does), else the base model's."""
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as err:
        raise ImportError(f"{TRL_MISSING} ({err})") from err
    device = "cuda" if torch.cuda.is_available() else "cpu"
    weights = found.base or found.path
    try:
        model = AutoModelForCausalLM.from_pretrained(weights, dtype="auto", local_files_only=True)
    except OSError as err:
        where = f"the adapter's base model {found.base!r} (adapter_config.json)" if found.base else str(found.path)
        raise OSError(f"cannot load {where} offline: {err}") from err
    if found.base:
        try:
            from peft import PeftModel
        except ImportError as err:
            raise ImportError(f"{TRL_MISSING} ({err})") from err
        model = PeftModel.from_pretrained(model, found.path)
    has_tokenizer = (found.path / "tokenizer_config.json").is_file()
    tokenizer = AutoTokenizer.from_pretrained(found.path if has_tokenizer else weights, local_files_only=True)
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(f"the tokenizer of {found.path if has_tokenizer else weights} has no chat template, so the "
                         "prompts cannot be rendered as training rendered them; save the tokenizer training used "
                         "(processing_class) beside the weights")
    return TransformersPolicy(model.to(device), tokenizer, max_new_tokens=max_new_tokens, batch_size=batch_size)
