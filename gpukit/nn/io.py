"""save and load: state dicts as ``.npz`` files that never execute code when read."""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import _dispatch
from .._version import __version__
from .module import Module

__all__ = ["load", "save"]

#: Name of the member holding the JSON metadata (no parameter is named like this).
META_KEY = "__gpukit_nn__"
FORMAT = "gpukit.nn.state_dict"


def save(obj: Module | Mapping[str, Any], path: str | os.PathLike) -> None:
    """Write a model's parameters (or a state dict) to ``path`` as ``.npz``.

    The file holds one array per key (PyTorch's names, ``"0.weight"``) and a JSON
    record of the format, gpukit's version, the keys, shapes and dtypes; nothing of
    the architecture and nothing pickled, so :func:`load` reads it with
    ``allow_pickle=False``.

    Parameters
    ----------
    obj : Module or mapping of str to array
        What to save; device arrays are copied to the host.
    path : str or path-like
        Written as given (no ``.npz`` suffix is added).

    Raises
    ------
    ValueError
        A key is empty or reserved, or a value is not a numeric array.

    Examples
    --------
    >>> import os, tempfile
    >>> import gpukit as gk
    >>> model = gk.nn.Sequential(gk.nn.Linear(3, 2, seed=0))
    >>> path = os.path.join(tempfile.mkdtemp(), "model.npz")
    >>> gk.nn.save(model, path)
    >>> sorted(gk.nn.load(path))
    ['0.bias', '0.weight']
    """
    state = obj.state_dict() if isinstance(obj, Module) else obj
    arrays: dict[str, np.ndarray] = {}
    for key, value in state.items():
        if not isinstance(key, str) or not key or key == META_KEY:
            raise ValueError(f"save: key {key!r} is not a usable parameter name")
        arr = _dispatch.to_numpy(value)
        if arr.dtype.kind not in "biufc":
            raise ValueError(f"save: {key!r} has dtype {arr.dtype}; only numeric arrays")
        arrays[key] = arr
    meta = {
        "format": FORMAT,
        "version": 1,
        "gpukit": __version__,
        "keys": list(arrays),
        "shapes": [list(a.shape) for a in arrays.values()],
        "dtypes": [a.dtype.str for a in arrays.values()],
    }
    record = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    with open(path, "wb") as f:
        np.savez(f, **arrays, **{META_KEY: record})


def load(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read a state dict written by :func:`save` (host NumPy arrays).

    Loads with ``allow_pickle=False`` and checks the file against its metadata, so a
    crafted file can neither run code nor smuggle in unlisted arrays.

    Parameters
    ----------
    path : str or path-like
        A file written by :func:`save`.

    Returns
    -------
    dict of str to numpy.ndarray
        Ready for ``model.load_state_dict``.

    Raises
    ------
    ValueError
        Not an ``.npz`` archive, a pickled/object array inside, no or malformed
        metadata, or arrays that disagree with it (listed).

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> import gpukit as gk
    >>> path = os.path.join(tempfile.mkdtemp(), "w.npz")
    >>> gk.nn.save({"weight": np.eye(2)}, path)
    >>> gk.nn.load(path)["weight"].tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError, zipfile.BadZipFile) as exc:
        raise ValueError(f"load: {os.fspath(path)!r} is not a gpukit .npz file ({exc})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError(f"load: {os.fspath(path)!r} holds a bare array, not a gpukit .npz file")
    with archive:
        try:
            arrays = {name: archive[name] for name in archive.files}
        except ValueError as exc:  # object arrays need pickle: refused
            raise ValueError(
                f"load: {os.fspath(path)!r} contains a pickled array ({exc})"
            ) from None
    record = arrays.pop(META_KEY, None)
    try:
        assert record is not None and record.dtype == np.uint8 and record.ndim == 1
        meta = json.loads(record.tobytes().decode())
        assert isinstance(meta, dict) and meta.get("format") == FORMAT
        keys, shapes, dtypes = meta["keys"], meta["shapes"], meta["dtypes"]
    except (AssertionError, ValueError, KeyError, UnicodeDecodeError):
        raise ValueError(
            f"load: {os.fspath(path)!r} has no valid gpukit metadata; was it written by gk.nn.save?"
        ) from None
    problems = []
    missing = [k for k in keys if k not in arrays]
    unexpected = [k for k in arrays if k not in keys]
    if missing:
        problems.append(f"arrays listed but absent {missing}")
    if unexpected:
        problems.append(f"arrays not listed {unexpected}")
    for k, shape, dtype in zip(keys, shapes, dtypes, strict=True):
        a = arrays.get(k)
        if a is not None and (list(a.shape) != list(shape) or a.dtype.str != dtype):
            problems.append(f"{k}: listed {tuple(shape)} {dtype}, stored {a.shape} {a.dtype.str}")
    if problems:
        raise ValueError(f"load: {os.fspath(path)!r} is inconsistent: " + "; ".join(problems))
    return {k: arrays[k] for k in keys}
