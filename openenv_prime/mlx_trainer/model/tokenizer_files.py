"""Writing a tokenizer into an mlx_lm model directory, shared by the tiny-model builder and the GGUF
converter (its own module so that neither of them imports the other)."""

from __future__ import annotations

import json
from pathlib import Path


def save_tokenizer(tokenizer, folder: Path) -> None:
    """`save_pretrained`, then make tokenizer_config.json self-contained and loadable by
    transformers 4 and 5 alike: the generic fast-tokenizer class, and the chat template inline."""
    tokenizer.save_pretrained(str(folder))
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    if tokenizer.chat_template:
        config["chat_template"] = tokenizer.chat_template
    config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False))
