"""OpenEnv environments served by openenv-prime, and the launcher that starts them in a subprocess.

Only `openenv_prime.envs.chain_sum.environment` and `.app` import the `openenv` package; the launcher
and the task layout do not, so clients and tests can use them beside any openenv version."""
