"""The MLX fallback trainer: GRPO with LoRA adapters on mlx-lm, on a laptop, choosing each group's task with this
package's samplers and playing its episodes on an OpenEnv server through the client's episode engine.

`openenv-prime train` (`cli.py`) runs `loop.train(config)`, which reads top to bottom:

* the run: `config` (the TOML settings, `default.toml` the embedded default), `rundir` (the run directory and its
  log), `resume` (sampler settings a checkpoint was saved with), `loop` (the run), `setup` (its parts, built once),
  `steps` (one training step, all or nothing, and the checkpoints), `evals` (greedy evals), `checkpoint`,
  `worker` (MLX on the main thread, sockets beside it), `errors`;
* rollouts and the update: `rollouts` (G episodes per task, one generation batch per round), `chat_tokens` (an
  episode as one token sequence), `generation` (batched sampling), `policy` (the model as an eval policy), `grpo`
  (the objective), `lora` and `trainable` (the adapters and the model being trained), `export` (adapters fused into
  a standalone model);
* `model/`: where the base model comes from (a tiny random model, SmolLM2 from a wheel, any mlx_lm directory) and the
  BLAS mlx runs on;
* `report/`: what a step logs, and the plots and summary read back from a run's log.

Importing this package imports no framework: mlx and mlx-lm load when a subcommand runs (`openenv-prime --help` stays
instant), so nothing is exported here; import from the module that does the job.
"""
