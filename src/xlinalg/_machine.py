"""What machine and software this is, described without naming anyone.

:func:`collect_env` describes the machine without importing any array library
but NumPy (versions come from package metadata), so it is cheap: the benchmark
writes it into each results file's header and ``xlinalg info`` prints it.

Results files are shared, so nothing that names a person or a machine goes in
them (:func:`shareable`): no host name, no user name, no absolute path (the
interpreter's, ``argv[0]``, ``--out``, case files, paths inside environment
variables or error messages). What identifies the machine for ``--resume`` and
``compare`` is :func:`machine_id`, a keyed hash of ``/etc/machine-id`` that
tells two machines apart and reveals nothing about either.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib.metadata
import os
import platform
import re
from typing import Any

__all__ = [
    "ENV_VARS",
    "blas_info",
    "blas_owner",
    "blas_text",
    "collect_env",
    "cpu_model",
    "machine_id",
    "shareable",
    "shareable_argv",
]

#: Environment variables that change what is measured; recorded when set.
ENV_VARS: tuple[str, ...] = (
    "OPENBLAS_CORETYPE",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OMP_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "XLA_FLAGS",
    "JAX_PLATFORMS",
    "JAX_ENABLE_X64",
    "JAX_DEFAULT_MATMUL_PRECISION",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "CUDA_VISIBLE_DEVICES",
    "CUPY_TF32",
    "NVIDIA_TF32_OVERRIDE",
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
    "PYTORCH_CUDA_ALLOC_CONF",
)

#: xlinalg's own dependencies recorded beside the backends' libraries (whose
#: distribution names each backend declares: ``Backend.bench.distributions``).
_TOOLS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("array-api-compat", ("array-api-compat",)),
    ("threadpoolctl", ("threadpoolctl",)),
)


def _distributions() -> dict[str, tuple[str, ...]]:
    """Key -> distribution names to try: every backend's, in registry order, then
    xlinalg's own dependencies."""
    from .backends import BACKEND_NAMES, get_backend

    out: dict[str, tuple[str, ...]] = {}
    for name in BACKEND_NAMES:
        for key, names in get_backend(name).bench.distributions:
            out.setdefault(key, names)
    for key, names in _TOOLS:
        out.setdefault(key, names)
    return out


def _dist_version(names: tuple[str, ...]) -> str | None:
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


#: An absolute path (POSIX, or a Windows drive path): two or more components, not
#: inside a word or a URL ("GB/s", "https://...", "a/b" stay as they are).
_ABS_PATH = re.compile(
    r"(?<![\w.~/\\-])/(?:[^\s/\\\"'=:,;()\[\]{}<>]+/)+[^\s/\\\"'=:,;()\[\]{}<>]*"
    r"|\b[A-Za-z]:\\(?:[^\s\\\"'=:,;()\[\]{}<>]+\\)*[^\s\\\"'=:,;()\[\]{}<>]*"
)


def _short_path(m: re.Match[str]) -> str:
    parts = [p for p in re.split(r"[/\\]", m.group(0)) if p]
    return ".../" + parts[-1] if parts else m.group(0)


def shareable(value: Any) -> Any:
    """`value` with the home directory written ``~`` and every other absolute path
    cut to ``.../<file name>``, in every string of nested dicts and lists (keys
    included); other values unchanged.

    Results files are shared: an absolute path names the user (``/home/<user>``)
    and the machine's layout; the file name is what a reader needs.
    """
    home = os.path.expanduser("~").rstrip("/\\")
    return _shareable(value, home if len(home) > 1 and home != "~" else None)


def _shareable(value: Any, home: str | None) -> Any:
    if isinstance(value, str):
        if "/" not in value and "\\" not in value:
            return value
        if home:  # the home directory itself ends in the user name: "~" keeps no name
            value = re.sub(re.escape(home) + r"(?![^/\\\s\"'=:,;])", "~", value)
        return _ABS_PATH.sub(_short_path, value)
    if isinstance(value, dict):
        return {_shareable(k, home): _shareable(v, home) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_shareable(v, home) for v in value]
    return value


def shareable_argv(argv: list[str]) -> list[str]:
    """The command line as recorded in a results file: the program as ``xlinalg``
    (``argv[0]`` is an absolute path: the interpreter's, or ``.../__main__.py``),
    the arguments through :func:`shareable`."""
    return ["xlinalg", *shareable([str(a) for a in argv[1:]])]


def machine_id() -> str | None:
    """An opaque id of this machine: HMAC-SHA256 of ``/etc/machine-id`` (the
    systemd id, random per installation) keyed for xlinalg, 16 hex digits, as
    systemd's ``sd_id128_get_machine_app_specific`` does. Two files from one
    machine have the same id; the id reveals neither the machine-id nor the host
    name. None where no machine-id is readable (then machines are told apart by
    CPU model and cores only)."""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            with open(path, "rb") as f:
                raw = f.read(256).strip()
        except OSError:
            continue
        if raw:
            return hmac.new(raw, b"xlinalg bench machine", hashlib.sha256).hexdigest()[:16]
    return None


def cpu_model() -> str:
    """The processor's model name ("AMD EPYC"), from /proc/cpuinfo; elsewhere the
    platform's processor or machine name."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def blas_info() -> list[dict[str, Any]]:
    """BLAS/OpenMP libraries loaded in this process (threadpoolctl), with their threads."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - threadpoolctl is in the bench extra
        return [{"error": "threadpoolctl is not installed (pip install threadpoolctl)"}]
    keep = ("user_api", "internal_api", "version", "num_threads", "threading_layer",
            "architecture", "prefix")
    out = []
    for info in threadpool_info():
        row = {k: info.get(k) for k in keep if k in info}
        owner = blas_owner(info.get("filepath"))
        if owner:
            row["owner"] = owner
        out.append(row)
    return out


def blas_text(lib: dict[str, Any]) -> str:
    """One loaded library as `xlinalg info` and the report show it: "openblas 0.3.30
    (SkylakeX), 2 threads, shipped with numpy"."""
    return (f"{lib.get('internal_api')} {lib.get('version') or ''} "
            f"({lib.get('architecture') or lib.get('prefix') or ''}), "
            f"{lib.get('num_threads')} threads"
            + (f", shipped with {lib['owner']}" if lib.get("owner") else ""))


def blas_owner(filepath: Any) -> str | None:
    """The installed package that ships a loaded library, from its path: ".../site-packages/
    numpy.libs/libscipy_openblas64_.so" -> "numpy"; None outside a package directory.

    NumPy and SciPy each bundle their own OpenBLAS (two versions can be loaded at once),
    so a reader needs the owner to tell them apart; the path itself is not recorded (it
    holds the user's home directory)."""
    if not isinstance(filepath, str):
        return None
    parts = re.split(r"[\\/]+", filepath)
    for i, part in enumerate(parts[:-1]):
        if part in ("site-packages", "dist-packages") and i + 2 < len(parts):
            name = parts[i + 1].removesuffix(".libs")
            return name if re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,59}", name) else None
    return None


def _memory_total() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except Exception:  # pragma: no cover - psutil missing
        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            return None


def _gpus() -> list[dict[str, Any]]:
    """GPUs seen by nvidia-smi (no CUDA library is imported). Empty when none."""
    import shutil
    import subprocess

    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run(
            [exe, "--query-gpu=name,memory.total,driver_version",
             "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=10, check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = []
    for line in out.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3:
            gpus.append({"name": parts[0], "memory_mib": parts[1], "driver": parts[2]})
    return gpus


def collect_env() -> dict[str, Any]:
    """The machine and software a run uses (stored in the results file's header)."""
    import numpy as np

    from ._version import __version__

    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    try:
        import psutil

        physical = psutil.cpu_count(logical=False)
    except Exception:  # pragma: no cover
        physical = None
    return {
        "xlinalg": __version__,
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "build": " ".join(platform.python_build()),
        },
        "os": {
            "platform": platform.platform(),
            "system": platform.system(),
            "release": platform.release(),
        },
        "machine_id": machine_id(),  # not the host name: results files are shared
        "cpu": {
            "model": cpu_model(),
            "machine": platform.machine(),
            "logical_cores": os.cpu_count(),
            "physical_cores": physical,
            "usable_cores": affinity,
        },
        "memory_bytes": _memory_total(),
        "gpus": _gpus(),
        "numpy": np.__version__,
        "packages": {k: _dist_version(v) for k, v in _distributions().items()},
        "blas": blas_info(),
        "env_vars": {k: shareable(os.environ[k]) for k in ENV_VARS if k in os.environ},
    }
