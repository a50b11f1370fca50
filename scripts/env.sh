# Sourced by scripts/test and scripts/train after scripts/setup: the process environment the project runs in.
BLAS=$(ls /usr/lib/*/libopenblas.so.0 2>/dev/null | head -n1 || true)
if [ -n "$BLAS" ]; then export LD_PRELOAD="$BLAS${LD_PRELOAD:+:$LD_PRELOAD}"; fi
if [ -x .venv-openenv010/bin/python ]; then export OPENENV_PRIME_OPENENV010_PYTHON="$PWD/.venv-openenv010/bin/python"; fi
