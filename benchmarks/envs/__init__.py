"""The environment servers' cost: how long a chain_sum server takes to import and start."""
