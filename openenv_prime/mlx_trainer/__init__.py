"""The MLX fallback trainer: GRPO with LoRA adapters on mlx-lm, on a laptop, choosing each group's task with this
package's samplers and playing its episodes on an OpenEnv server through the client's episode engine.

One folder per job; `openenv-prime train` (`cli.py`) runs `training.loop.train(config)`:

* `training/`: the run, top to bottom (`loop`), its parts built once (`setup`), one all-or-nothing step (`steps`),
  greedy evals (`evals`), checkpoints and resume (`checkpoint`, `rundir`, `resume`), the objective and the adapters
  (`grpo`, `lora`, `trainable`);
* `rollouts/`: playing G episodes per task with the model (`runner`), an episode as one token sequence
  (`chat_tokens`), batched sampling (`generation`), the model as an eval policy (`policy`);
* `model/`: where the base model comes from (a tiny random model, SmolLM2 from a wheel, any mlx_lm directory) and the
  BLAS mlx runs on;
* `report/`: what a step logs, and the plots and summary read back from a run's log.

Beside them: `config` (the TOML settings, `default.toml` the embedded default), `worker` (MLX on the main thread,
sockets beside it; shared by training and rollouts), `errors`, `export` (adapters fused into a standalone model),
`cli`. Importing this package or a folder imports no framework: mlx and mlx-lm load when a subcommand runs
(`openenv-prime --help` stays instant), so nothing is exported here; import from the module that does the job.
"""
