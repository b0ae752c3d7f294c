"""What ``gpukit info`` reports: versions, backends, selection, devices, BLAS."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sys
from typing import Any

from ._runtime.memstats import format_bytes, stats_for
from ._select import configure as _configure
from ._select import registry as _registry
from ._select import selection as _selection
from ._version import __version__
from .errors import GpukitError


def _blas() -> dict[str, Any]:
    import numpy as np

    blas: dict[str, Any] = {}
    try:
        config = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        blas = {"name": config.get("name"), "version": config.get("version")}
    except Exception:  # older NumPy without mode="dicts"
        blas = {"name": None, "version": None}
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        blas["threads"] = None
        blas["threads_note"] = "install threadpoolctl to see BLAS threads"
        return blas
    pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
    blas["threads"] = pools[0]["num_threads"] if pools else None
    return blas


def _memory(backend, index: int) -> dict[str, Any]:
    """The device's memory figures; an error becomes a reason, never a crash of ``info``."""
    try:
        stats = stats_for(backend, index)
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    keys = ("free", "in_use", "pool_held", "pool_unused", "limit")
    return {k: getattr(stats, k) for k in keys}


def _settings() -> dict[str, Any]:
    """Process-wide settings: TF32 (``GPUKIT_TF32``; ``CUPY_TF32`` is not applied) and the
    transfer guard (``GPUKIT_TRANSFER_GUARD``)."""
    try:
        tf32: bool | str = _configure.tf32()
    except ValueError as exc:
        tf32 = f"misconfigured: {exc}"
    try:
        guard = _configure.transfer_guard()
    except ValueError as exc:
        guard = f"misconfigured: {exc}"
    else:
        if os.environ.get(_configure.GUARD_VAR, "").strip():
            guard += f" ({_configure.GUARD_VAR}={os.environ[_configure.GUARD_VAR]})"
    cupy_tf32 = os.environ.get("CUPY_TF32", "").strip()
    return {"tf32": tf32, "cupy_tf32": cupy_tf32 or None, "transfer_guard": guard}


def _dask() -> dict[str, Any] | None:
    """The Dask set-up (never imports Dask): versions, the scheduler address, the client."""
    versions = {}
    for name in ("dask", "distributed", "dask-cuda", "dask-jobqueue"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    address = os.environ.get("GPUKIT_DASK_SCHEDULER", "").strip() or None
    if not versions and address is None:
        return None
    client = None
    if "gpukit.distributed._client" in sys.modules:  # a client exists only once it is imported
        from .distributed._client import status

        client = status()
    return {"versions": versions, "scheduler": address, "client": client}


def collect() -> dict[str, Any]:
    """Everything ``gpukit info`` shows, as JSON-ready data."""
    import numpy as np
    import scipy

    info: dict[str, Any] = {
        "gpukit": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "versions": {"numpy": np.__version__, "scipy": scipy.__version__},
        "backends": {},
    }
    for name, status in _registry.available_backends().items():
        info["backends"][name] = {
            "available": status.available,
            "reason": status.reason,
            "source": status.source,
        }
    try:
        backend = _selection.get_backend()
        info["selected"] = {"name": backend.name, "reason": _selection.selection_reason()}
    except (GpukitError, ValueError) as exc:  # unknown/unusable backend, malformed setting
        info["selected"] = {"name": None, "reason": str(exc)}
    devices = []
    for name, status in info["backends"].items():
        if not status["available"]:
            continue
        backend = _registry.load(name)
        info["versions"].update(backend.versions())
        for d in backend.devices():
            devices.append(
                {
                    "device": str(d),
                    "name": d.name,
                    "memory_total": d.memory_total,
                    "compute_capability": d.compute_capability,
                    "memory": _memory(backend, d.index),
                }
            )
    if "cupy" in sys.modules and "cupy" not in info["versions"]:
        # CuPy imports but cannot run: its CUDA runtime and driver versions say why
        from gpukit_cupy.backend import versions as cupy_versions

        info["versions"].update(cupy_versions())
    info["devices"] = devices
    info["settings"] = _settings()
    info["blas"] = _blas()
    info["dask"] = _dask()
    return info


def _render_memory(m: dict[str, Any]) -> str:
    if "error" in m:
        return f"memory figures unavailable: {m['error']}"
    size = {k: format_bytes(v) for k, v in m.items()}
    if m["pool_held"] is None:
        return f"free {size['free']}; no memory pool"
    limit = "none" if m["limit"] is None else size["limit"]
    return (
        f"free {size['free']}, pool {size['pool_held']} (in use {size['in_use']}, "
        f"unused {size['pool_unused']}), limit {limit}"
    )


def render(info: dict[str, Any]) -> str:
    """``collect()``'s data as the text ``gpukit info`` prints."""
    lines = [f"gpukit {info['gpukit']}  (Python {info['python']}, {info['platform']})", ""]
    lines.append("Backends:")
    for name, b in info["backends"].items():
        mark = "available  " if b["available"] else "unavailable"
        lines.append(f"  {name:<10} {mark}  {b['reason']}  [{b['source']}]")
    sel = info["selected"]
    lines += ["", f"Selected: {sel['name']}  ({sel['reason']})", "", "Devices:"]
    for d in info["devices"]:
        cc = f", compute capability {d['compute_capability']}" if d["compute_capability"] else ""
        lines.append(
            f"  {d['device']:<8} {d['name']}  memory {format_bytes(d['memory_total'])}{cc}"
        )
        lines.append(f"  {'':<8} {_render_memory(d['memory'])}")
    settings = info["settings"]
    tf32, cupy_tf32 = settings["tf32"], settings["cupy_tf32"]
    state = {True: "on (GPUKIT_TF32=1)", False: "off"}.get(tf32, tf32)
    lines += [
        "",
        "Settings:",
        f"  TF32 in float32/complex64 products that name no precision: {state}",
        f"  implicit host/device transfers (the transfer guard): {settings['transfer_guard']}",
    ]
    if cupy_tf32 is not None:
        lines.append(f"  CUPY_TF32={cupy_tf32} is set; gpukit does not apply it (GPUKIT_TF32 does)")
    lines += ["", "Versions:"]
    lines += [f"  {k:<13} {v}" for k, v in info["versions"].items()]
    blas = info["blas"]
    threads = blas.get("threads")
    lines.append(
        f"  {'blas':<13} {blas.get('name')} {blas.get('version')}, "
        f"{threads if threads is not None else blas.get('threads_note', 'unknown')} threads"
    )
    dask = info.get("dask")
    if dask is not None:
        lines += ["", "Dask:"]
        lines += [f"  {k:<13} {v}" for k, v in dask["versions"].items()]
        lines.append(
            f"  {'scheduler':<13} GPUKIT_DASK_SCHEDULER={dask['scheduler']}"
            if dask["scheduler"]
            else f"  {'scheduler':<13} GPUKIT_DASK_SCHEDULER not set: gk.distributed.client() "
            "starts an in-process cluster"
        )
        c = dask["client"]
        if c is not None:
            lines.append(
                f"  {'client':<13} {c['kind']} at {c['scheduler']}: {c['workers']} worker(s), "
                f"{c['threads']} thread(s)"
            )
    return "\n".join(lines)
