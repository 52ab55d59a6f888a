"""``xlinalg info``: the backends, versions, devices, BLAS and threads."""

from __future__ import annotations

import argparse
import contextlib
import json
from typing import Any

from ._common import ExitCode, _console, _fmt_bytes


def cmd_info(args: argparse.Namespace) -> int:
    from .._lib._escape import rich_text, terminal
    from .._machine import blas_text, collect_env
    from ..backends import BACKEND_NAMES, get_backend

    rows = []
    for name in BACKEND_NAMES:
        b = get_backend(name)
        reason = b.unavailable_reason()
        row: dict[str, Any] = {"backend": name, "available": reason is None}
        if reason is None:
            try:
                row["version"] = b.bench.version()
                row["device"] = b.bench.device_name()
            except Exception as exc:  # pragma: no cover - a broken install
                row["version"] = "?"
                row["device"] = f"error: {exc}"
        else:
            row["reason"] = reason
            row["install"] = b.install
        rows.append(row)
    env = collect_env()
    threads: dict[str, Any] = {}
    for r in rows:
        if r["available"]:  # each library's own settings (torch: threads, precision)
            threads.update(get_backend(r["backend"]).bench.thread_info())
    env["blas"] = _blas_now()
    if args.json:
        print(json.dumps({"backends": rows, "env": env, "threads": threads}, indent=2))
        return ExitCode.OK

    out = _console()
    if out is not None:
        from rich.table import Table

        t = Table(title="xlinalg backends", title_justify="left")
        for col in ("backend", "status", "version", "device / why not"):
            t.add_column(col)
        for r in rows:
            if r["available"]:
                t.add_row(rich_text(r["backend"]), "[green]available[/]",
                          rich_text(r["version"]), rich_text(r["device"]))
            else:
                t.add_row(rich_text(r["backend"]), "[red]unavailable[/]", "",
                          rich_text(f"{r['reason']}; install: {r['install']}"))
        out.print(t)
    else:
        for r in rows:
            if r["available"]:
                print(terminal(f"{r['backend']:18s} available    {r['version']:12s} "
                               f"{r['device']}"))
            else:
                print(terminal(f"{r['backend']:18s} unavailable  {r['reason']}; "
                               f"install: {r['install']}"))
    cpu = env["cpu"]
    print()
    print(terminal(f"Python {env['python']['version']} on {env['os']['platform']}"))
    print(terminal(f"CPU: {cpu['model']} ({cpu['logical_cores']} logical cores, "
                   f"{cpu['usable_cores']} usable); memory {_fmt_bytes(env['memory_bytes'])}"))
    gpus = env["gpus"]
    print(terminal("GPU: " + (", ".join(f"{g['name']} ({g['memory_mib']} MiB)" for g in gpus)
                              if gpus else "none found (no nvidia-smi or no device)")))
    for lib in env["blas"]:
        if "error" in lib:
            print(terminal(f"BLAS: {lib['error']}"))
            continue
        print(terminal(f"{str(lib.get('user_api', '?')).upper()}: {blas_text(lib)}"))
    for k, v in threads.items():
        print(f"{k}: {v}")
    if env["env_vars"]:  # values of the user's environment: shown, never interpreted
        print(terminal("environment: " + " ".join(f"{k}={v}"
                                                  for k, v in env["env_vars"].items())))
    return ExitCode.OK


def _blas_now() -> list[dict[str, Any]]:
    import numpy as np  # noqa: F401 - load NumPy's BLAS so that threadpoolctl sees it

    from .._machine import blas_info

    with contextlib.suppress(ImportError):  # SciPy may bring its own BLAS
        import scipy.linalg  # noqa: F401
    return blas_info()
