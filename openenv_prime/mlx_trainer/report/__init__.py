"""What a run reports: the metrics each step logs, and the plots and summary read back from its log.jsonl.

`metrics` builds a step's log line (rewards, the sampler's metrics for the most-drawn keys); `log` reads log.jsonl
once; `curves` draws per-family eval accuracy against episodes and tokens (`openenv-prime plot`); `sampler_panel`
draws what the sampler did; `run_plots` writes both at a run's end; `summary` prints what moved; `trackers` mirrors
the log to TensorBoard and W&B (``report_to``). matplotlib is imported only when a figure is drawn, tensorboardX and
wandb only when a tracker opens. (Runs of several samplers over seeds are drawn by the comparison study,
studies/mlx_runs/compare.py.)
"""

from openenv_prime.evaluation.curves import RunCurves, build_figure, eval_curves, eval_headline, load_run, plot_runs
from openenv_prime.evaluation.runlog import RunLog, read_log
from openenv_prime.mlx_trainer.report.run_plots import plot_run
from openenv_prime.mlx_trainer.report.sampler_panel import RunSteps, build_sampler_figure, load_steps, step_history
from openenv_prime.mlx_trainer.report.summary import summarize

__all__ = ["RunCurves", "RunLog", "RunSteps", "build_figure", "build_sampler_figure", "eval_curves", "eval_headline",
           "load_run", "load_steps", "plot_run", "plot_runs", "read_log", "step_history", "summarize"]
