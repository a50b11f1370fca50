"""The MLX trainer's runs and speed: the default run over seeds, where a step's time goes, curriculum against uniform,
Ctrl-C, a quantized base, mlx-lm-lora on the same batch, and mlx's BLAS. `common` holds what they share."""
