"""Scripts that measure openenv-prime and print the tables its docs quote (benchmarks/README.md lists each one).

One folder per part of the package, named as in `openenv_prime/` and `tests/` (`samplers`, `client`, `envs`,
`evaluation`, `verifiers_taskset`, `prime_rl_adapter`, `mlx_trainer`), plus `worlds` (the learning simulator) and
`imports` (the import cost of the whole package). Each script is a module, run from the repository root:
``python -m benchmarks.samplers.call_cost``.
"""
