"""Scripts that measure openenv-prime's speed and cost and print the tables its docs quote (benchmarks/README.md lists
each one). What samplers and runs learn is studied in `studies/`, not here.

One folder per part of the package, named as in `openenv_prime/` and `tests/` (`samplers`, `client`, `envs`,
`evaluation`, `verifiers_taskset`, `prime_rl_adapter`, `mlx_trainer`, `trl`), plus `imports` (the import cost of the
whole package). Each script is a module, run from the repository root: ``python -m benchmarks.samplers.call_cost``.
"""
