"""OpenEnv environments served by openenv-prime, and the launcher that starts them in a subprocess.

`reasoning_gym_tiers` (any reasoning-gym datasets in curriculum tiers; `serve chain-sum` is its chain_sum case)
and `taskapi` (the Task API added to anyone's Environment class) hold the servers; only their `environment`,
`app`, `wrap` and `classes` modules, and `one_question` (the episode of the tiers servers), import the
`openenv` package. The launcher, the CLI and the task layouts
do not, so clients and tests can use them beside any openenv version."""
