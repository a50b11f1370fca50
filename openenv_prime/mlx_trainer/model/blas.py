"""Which BLAS mlx's CPU matmuls run on, and how the trainer gets a fast one.

The `mlx-cpu` wheel for Linux bundles netlib's reference BLAS (2-5 GFLOPS). Preloading Debian's
OpenBLAS, which exports the same `cblas_*` symbols, makes f32 matmuls 10-50x faster and training
steps 5-15x faster. The preload must be in the environment before the process starts, so
`openenv-prime train` re-executes itself once with it (:func:`reexec_with_openblas`); where OpenBLAS
is missing, :func:`warn_if_slow` says what to install.

Run `python -m openenv_prime.mlx_trainer.model.blas` for a report with a measured matmul speed."""

from __future__ import annotations

import ctypes
import glob
import os
import platform
import sys
import time
from dataclasses import dataclass

APT_COMMAND = "apt-get install -y libopenblas0-pthread"
# Set in the environment of the re-executed process, so that it never re-executes again.
REEXEC_MARKER = "OPENENV_PRIME_BLAS_REEXEC"


@dataclass(frozen=True)
class BlasInfo:
    """`kind` is "openblas", "reference" (the slow bundled netlib BLAS), "accelerate" (macOS),
    "other" (some other preloaded cblas) or "unknown"; `fix` is the shell command(s) that make
    it fast, or None when nothing needs fixing."""

    kind: str
    library: str | None
    slow: bool
    fix: str | None

    def message(self, command: str = "openenv-prime train ...") -> str:
        if not self.slow:
            return f"BLAS: {self.kind} ({self.library or 'system'}): fast matmuls."
        fix = fix_command(command)
        return (
            f"BLAS: mlx is using the slow reference BLAS bundled in mlx-cpu ({self.library}); "
            f"training runs 5-15x slower than it could. Fix:\n{fix}"
        )


def detect_blas() -> BlasInfo:
    """Find the library that mlx's `cblas_sgemm` binds to in this process (imports mlx.core)."""
    import mlx.core  # noqa: F401  (loads libmlx and its bundled BLAS into the process)

    if sys.platform == "darwin":
        return BlasInfo("accelerate", "Accelerate.framework", slow=False, fix=None)
    if not sys.platform.startswith("linux"):
        return BlasInfo("unknown", None, slow=False, fix=None)
    # A library in the global scope (the executable and LD_PRELOAD) wins over libmlx's own
    # dependencies, so a cblas_sgemm found there is the one mlx calls.
    preloaded = _global_symbol_library("cblas_sgemm")
    if preloaded is not None:
        kind = "openblas" if "openblas" in os.path.basename(preloaded).lower() else "other"
        return BlasInfo(kind, preloaded, slow=False, fix=None)
    bundled = next((p for p in _loaded_libraries() if "mlx_cpu.libs" in p and "libblas" in os.path.basename(p)), None)
    if bundled is not None:
        return BlasInfo("reference", bundled, slow=True, fix=fix_command())
    return BlasInfo("unknown", None, slow=False, fix=None)


def fix_command(command: str = "openenv-prime train ...") -> str:
    """The exact lines to run: install Debian's OpenBLAS unless it is already here, then preload it."""
    installed = installed_openblas()
    library = installed or f"/usr/lib/{platform.machine()}-linux-gnu/libopenblas.so.0"
    preload = f"LD_PRELOAD={library} {command}"
    return preload if installed else f"{APT_COMMAND}\n{preload}"


def installed_openblas() -> str | None:
    """Debian's OpenBLAS (libopenblas0-pthread or -openmp), if installed."""
    installed = sorted(glob.glob("/usr/lib/*/libopenblas.so.0"))
    return installed[0] if installed else None


def reexec_with_openblas() -> None:
    """Replace this process by itself with OpenBLAS preloaded, when that makes mlx faster.

    Call before mlx is imported and before any thread, file or server is opened. `os.execve` keeps the process id,
    so the caller's exit status and Ctrl-C reach the same process as before. Returns (and the process runs on, with
    :func:`warn_if_slow`'s advice) off Linux, once re-executed (:data:`REEXEC_MARKER`), when some `cblas_sgemm` is
    already preloaded, when OpenBLAS is not installed, or when the exec fails."""
    if not sys.platform.startswith("linux") or os.environ.get(REEXEC_MARKER):
        return
    library = installed_openblas()
    if library is None or _global_symbol_library("cblas_sgemm") is not None:
        return
    preload = os.environ.get("LD_PRELOAD")
    env = {**os.environ, REEXEC_MARKER: library, "LD_PRELOAD": f"{library}:{preload}" if preload else library}
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)
    except OSError:
        return


def preloaded_by_reexec() -> str | None:
    """The library :func:`reexec_with_openblas` preloaded, in the re-executed process; else None."""
    return os.environ.get(REEXEC_MARKER) or None


def matmul_gflops(n: int = 512, repeats: int = 5) -> float:
    """Measured f32 matmul speed of mlx on the default device, for reports (not for decisions)."""
    import mlx.core as mx

    a, b = mx.random.normal((n, n)), mx.random.normal((n, n))
    mx.eval(a @ b)
    start = time.perf_counter()
    for _ in range(repeats):
        mx.eval(a @ b)
    return 2 * n**3 * repeats / (time.perf_counter() - start) / 1e9


def warn_if_slow(print_fn=print, command: str = "openenv-prime train ...") -> BlasInfo:
    """Call at trainer start: prints the fix when mlx runs on the reference BLAS."""
    info = detect_blas()
    if info.slow:
        print_fn(info.message(command))
    return info


def _global_symbol_library(symbol: str) -> str | None:
    try:
        address = ctypes.cast(getattr(ctypes.CDLL(None), symbol), ctypes.c_void_p).value
    except AttributeError:
        return None
    return _library_of(address)


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def _library_of(address: int | None) -> str | None:
    info = _DlInfo()
    dladdr = ctypes.CDLL(None).dladdr
    dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    if not address or not dladdr(ctypes.c_void_p(address), ctypes.byref(info)) or not info.dli_fname:
        return None
    return os.path.realpath(info.dli_fname.decode())


def _loaded_libraries() -> list[str]:
    try:
        with open("/proc/self/maps") as maps:
            return list(dict.fromkeys(line.split()[-1] for line in maps if ".so" in line))
    except OSError:
        return []


def main() -> int:
    info = detect_blas()
    print(info.message("openenv-prime train CONFIG.toml"))
    print(f"f32 matmul 512x512: {matmul_gflops():.1f} GFLOPS")
    return 1 if info.slow else 0


if __name__ == "__main__":
    sys.exit(main())
