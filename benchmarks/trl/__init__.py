"""TRL's speed: seconds per step, and openenv-prime's share of it, on one process and on several (`processes`)."""
