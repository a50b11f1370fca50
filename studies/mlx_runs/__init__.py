"""Studies made of real MLX training runs: the default run over seeds (`default_run`), the package's samplers against
uniform and a 2025 peer on held-out questions (`compare`), and held-out accuracy at equal training signal over a
comparison's runs (`signal_quality`). They read their runs with `studies.run_dirs`."""
