"""Training: `loop.train(config)` plans the run in its directory (`rundir`, `resume`), builds its parts once
(`setup`), restores a checkpoint (`checkpoint`), then evaluates (`evals`), steps (`steps`: sample, play, update the
sampler, train on the groups with signal with `grpo`) and checkpoints until the last step. `lora` and `trainable`
are the adapters and the model being trained. Nothing is imported here, so importing the folder loads no mlx.
"""
