"""Studies of what samplers and training runs learn, each printing the tables its docs quote (studies/README.md lists
each one with its command and what it decides); speed and cost are measured in `benchmarks/`.

`worlds` is the learning simulator (its suite, the tiers report, the calibration from real runs, a 2025 peer behind
the package's sampler interface); `mlx_runs` trains and reads real MLX runs (the default over seeds, the samplers
compared on held-out questions, held-out accuracy at equal signal); `trl_vs_mlx` the default run in TRL beside the
MLX trainer. `run_dirs` is the one place that reads run directories. Each study is a module, run from the repository
root: ``python -m studies.worlds``.
"""
