"""What the compatibility matrix (scripts/openenv_compat.py) serves with `openenv-prime serve MODULE:FUNCTION`: the
functions that build an OpenEnv environment whose constructor takes Python objects, imported by the server's
interpreter from the checkout (nothing of OpenEnv's code is copied here).

finrl_env's `FinRLEnvironment(finrl_env_class, finrl_env_config)` takes FinRL's environment class and a config holding
a pandas DataFrame: `--env-kwargs` (JSON) cannot carry either, so :func:`finrl_environment` builds them from the same
JSON config file (with `data_path`, a CSV) that its own app reads from `FINRL_CONFIG_PATH`.
"""

from __future__ import annotations

import json
from typing import Any


def finrl_environment(config_path: str) -> Any:
    """finrl_env's environment, configured as its own app configures it from `FINRL_CONFIG_PATH` (server/app.py)."""
    import pandas as pd
    from envs.finrl_env.server.finrl_environment import FinRLEnvironment
    from finrl.meta.env_stock_trading.env_stocktrading import StockTradingEnv

    with open(config_path) as file:
        config = json.load(file)
    config["df"] = pd.read_csv(config.pop("data_path"))
    return FinRLEnvironment(finrl_env_class=StockTradingEnv, finrl_env_config=config)
