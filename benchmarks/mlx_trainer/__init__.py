"""The MLX trainer's speed: where a step's time goes, Ctrl-C, a quantized base, mlx-lm-lora on the same batch, and
mlx's BLAS. `common` holds what they share; `tiny_world` is the tiny model's game. (What runs learn, the default over
seeds and the samplers compared, are studies: studies/mlx_runs/.)"""
