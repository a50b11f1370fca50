# Sourced by scripts/check-verifiers and patches/check: what a verifiers source tree is, and a venv
# built from it once (reused while the tree's commit, this repository's pyproject.toml and the
# calling script are unchanged).

# verifiers_id DIR: "commit <sha>" for a git checkout, "version <v>" for an unpacked sdist; exit 2
# with the reason when DIR is not a verifiers source tree.
verifiers_id() {
    local dir=$1
    if [[ ! -f "$dir/pyproject.toml" || ! -d "$dir/verifiers/v1" ]] \
        || ! grep -q '^name = "verifiers"' "$dir/pyproject.toml"; then
        echo "$dir is not a verifiers source tree (no pyproject.toml naming verifiers, or no verifiers/v1)." >&2
        echo "  give a git checkout (e.g. prime-rl's deps/verifiers) or an unpacked sdist (pip download --no-binary :all: --no-deps verifiers==0.4.0)" >&2
        return 2
    fi
    if git -C "$dir" rev-parse --verify -q HEAD >/dev/null 2>&1 && [[ "$(git -C "$dir" rev-parse --show-toplevel)" == "$(cd "$dir" && pwd -P)" ]]; then
        echo "commit $(git -C "$dir" rev-parse HEAD)"
    elif [[ -f "$dir/PKG-INFO" ]]; then
        echo "version $(sed -n 's/^Version: //p' "$dir/PKG-INFO" | head -n1)"
    else
        echo "$dir has neither git history nor PKG-INFO, so its version is unknown; give a git checkout or an unpacked sdist" >&2
        return 2
    fi
}

# build_venv VENV STAMP LOG PIP_ARGS...: make VENV with python3.11 (or $CHECK_PYTHON) and pip install
# PIP_ARGS into it, unless VENV/.stamp already says STAMP. pip's output goes to LOG; its tail is
# printed on failure.
build_venv() {
    local venv=$1 stamp=$2 log=$3
    shift 3
    if [[ -f "$venv/.stamp" && "$(cat "$venv/.stamp")" == "$stamp" ]]; then
        echo "reusing $venv"
        return 0
    fi
    local python="${CHECK_PYTHON:-python3.11}"
    command -v "$python" >/dev/null || { echo "no $python to build $venv with; set CHECK_PYTHON" >&2; return 2; }
    echo "building $venv (pip's log: $log; a few minutes the first time)"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    if ! { "$venv/bin/pip" install -q --upgrade pip && "$venv/bin/pip" install -q "$@"; } >"$log" 2>&1; then
        grep -v '^WARNING: Location' "$log" | tail -n 30 >&2
        echo "pip install $* failed (log: $log)" >&2
        return 1
    fi
    echo "$stamp" >"$venv/.stamp"
}
