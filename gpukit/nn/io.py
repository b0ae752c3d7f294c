"""save and load: state dicts as ``.npz`` files, written atomically, read without trust.

:func:`save` writes a temporary file beside the target, flushes and fsyncs it, renames it
over the target and fsyncs the directory, so a failure at any point (a full disk, an
exception while converting a parameter, Ctrl-C) leaves the previous file as it was.

:func:`load` reads the archive member by member with its own checks instead of
``numpy.load``: it never unpickles, accepts only uncompressed ``.npy`` members of numeric
dtypes, and checks every size a header or the zip directory declares against the bytes
the file actually holds before it allocates anything, so a damaged or hostile file is a
``ValueError`` naming the file and the problem, never a huge allocation.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import secrets
import stat
import struct
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from typing import IO, Any

import numpy as np

from .. import _dispatch
from .._runtime.memory import operation
from .._version import __version__
from .module import Module

__all__ = ["load", "save"]

#: Name of the member holding the JSON metadata (no parameter is named like this).
META_KEY = "__gpukit_nn__"
FORMAT = "gpukit.nn.state_dict"
#: Dtype kinds a state dict may hold: bool, integers, floats, complex (never objects).
_NUMERIC_KINDS = frozenset("biufc")
#: The largest .npy header read (NumPy's own default limit for untrusted files).
_MAX_HEADER = 10_000
#: Bytes read at a time into an array (each read makes a temporary bytes object).
_CHUNK = 1 << 24
_O_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation


def _check_path(op: str, path: Any) -> str:
    if not isinstance(path, str | bytes | os.PathLike):
        raise TypeError(f"{op}: path must be a str or os.PathLike, got {type(path).__name__}")
    return os.fsdecode(path)


@operation("gk.nn.save")
def save(obj: Module | Mapping[str, Any], path: str | os.PathLike) -> None:
    """Write a model's parameters (or a state dict) to ``path`` as ``.npz``, atomically.

    The file holds one array per key (PyTorch's names, ``"0.weight"``) and a JSON
    record of the format, gpukit's version, the keys, shapes and dtypes; nothing of
    the architecture and nothing pickled, so :func:`load` reads it without running
    code. Every array is copied to the host first; the file is then written to a
    temporary file in the same directory, flushed, fsynced and renamed over ``path``
    (and the directory fsynced), so a failure at any point -- a full disk, an error
    converting a parameter, ``KeyboardInterrupt`` -- leaves a previous file at ``path``
    intact and no temporary file behind. A symbolic link at ``path`` is followed; an
    existing file keeps its permission bits.

    Parameters
    ----------
    obj : Module or mapping of str to array
        What to save; device arrays are copied to the host.
    path : str or path-like
        Written as given (no ``.npz`` suffix is added).

    Raises
    ------
    TypeError
        ``obj`` is neither a Module nor a mapping, or ``path`` is not a path.
    ValueError
        A key is empty, reserved or not a string, or a value is not a numeric array.
    OSError
        The file cannot be written (the previous file, if any, is unchanged).

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
    target = _check_path("gk.nn.save", path)
    if isinstance(obj, Module):
        state = obj.state_dict()
    elif isinstance(obj, Mapping):
        state = obj
    else:
        raise TypeError(
            f"gk.nn.save: obj must be a gk.nn.Module or a mapping of names to arrays (a "
            f"state dict), got {type(obj).__name__}"
        )
    arrays: dict[str, np.ndarray] = {}
    for key, value in state.items():
        if not isinstance(key, str) or not key or key == META_KEY:
            raise ValueError(f"gk.nn.save: key {key!r} is not a usable parameter name")
        arr = _dispatch.to_numpy(value)
        if arr.dtype.kind not in _NUMERIC_KINDS or arr.dtype.fields is not None:
            raise ValueError(
                f"gk.nn.save: {key!r} has dtype {arr.dtype}; only numeric arrays are saved"
            )
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
    with _atomic_replace(os.path.realpath(target)) as f:
        np.savez(f, **arrays, **{META_KEY: record})


@contextlib.contextmanager
def _atomic_replace(target: str) -> Iterator[IO[bytes]]:
    """A file to write whose content replaces ``target`` only once complete and on disk."""
    directory = os.path.dirname(target) or "."
    try:
        mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None  # a new file: 0o666 less the umask, as open() would give it
    while True:
        tmp = os.path.join(directory, f".{os.path.basename(target)}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY, 0o666)
        except FileExistsError:
            continue
        break
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:  # KeyboardInterrupt too: never leave the temporary behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_directory(directory)


def _fsync_directory(directory: str) -> None:
    """Make the rename durable. Best effort: Windows cannot open a directory, and some
    file systems refuse to sync one (the file's own data is already synced)."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


class _Damaged(Exception):
    """What is wrong with the file, in words (becomes the ValueError's message)."""


@operation("gk.nn.load")
def load(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read a state dict written by :func:`save` (host NumPy arrays), trusting nothing.

    The archive is checked member by member before anything is allocated: only
    uncompressed, unencrypted ``.npy`` members, each named once, of a numeric dtype,
    whose header's shape and dtype account exactly for the member's bytes, which the
    file must actually hold. Nothing is ever unpickled. The arrays must then agree with
    the JSON record :func:`save` writes.

    Parameters
    ----------
    path : str or path-like
        A file written by :func:`save`.

    Returns
    -------
    dict of str to numpy.ndarray
        Ready for ``model.load_state_dict``; the arrays are writeable copies.

    Raises
    ------
    TypeError
        ``path`` is not a path.
    ValueError
        The file is damaged or not a gpukit state dict, naming the file and the problem:
        empty, truncated or random bytes, a member that is not a ``.npy`` array (a
        nested archive, a pickle), a compressed or encrypted member, a duplicate member,
        a non-numeric dtype, a header declaring more data than the file holds, a bad
        checksum, or metadata that is missing, malformed or disagrees with the arrays.
    OSError
        The file cannot be opened (missing, a directory, no permission).

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
    name = _check_path("gk.nn.load", path)
    with open(name, "rb") as f:  # a missing file is an OSError, not damage
        try:
            arrays = _read_archive(f, os.fstat(f.fileno()).st_size)
            return _match_metadata(arrays)
        except _Damaged as exc:
            problem = str(exc)
        except (
            zipfile.BadZipFile,  # bad magic, bad CRC, truncated directory
            zipfile.LargeZipFile,
            EOFError,
            struct.error,
            zlib.error,
            NotImplementedError,  # an unknown compression method
            ValueError,  # NumPy's header parser, negative seeks
            OSError,  # seeks outside the file
        ) as exc:
            detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            problem = f"damaged or truncated archive ({detail})"
    raise ValueError(f"gk.nn.load: {name!r} is not a valid gpukit state dict: {problem}")


def _read_archive(f: IO[bytes], size: int) -> dict[str, np.ndarray]:
    if size == 0:
        raise _Damaged("the file is empty")
    if not zipfile.is_zipfile(f):
        raise _Damaged("not a zip archive (.npz); truncated, or not written by gk.nn.save")
    f.seek(0)
    with zipfile.ZipFile(f) as archive:
        infos = archive.infolist()
        seen: set[str] = set()
        for info in infos:
            _check_member(info, size, seen)
        return {info.filename[:-4]: _read_member(archive, info) for info in infos}


def _check_member(info: zipfile.ZipInfo, size: int, seen: set[str]) -> None:
    """The zip directory's claims about one member, checked against the file's size."""
    member = info.filename
    if member in seen:
        raise _Damaged(f"member {member!r} appears twice")
    seen.add(member)
    if not member.endswith(".npy"):
        kind = "a nested archive" if member.lower().endswith((".npz", ".zip")) else "a file"
        raise _Damaged(f"member {member!r} is {kind}, not a .npy array")
    if info.flag_bits & 0x1:
        raise _Damaged(f"member {member!r} is encrypted")
    if info.compress_type != zipfile.ZIP_STORED:
        # gk.nn.save stores members uncompressed; a compressed one could inflate to far
        # more than the file holds (a zip bomb)
        raise _Damaged(
            f"member {member!r} is compressed (method {info.compress_type}); gk.nn.save "
            "writes uncompressed archives"
        )
    if info.file_size != info.compress_size or info.header_offset + info.compress_size > size:
        raise _Damaged(
            f"member {member!r} declares {info.file_size:,} bytes but the {size:,}-byte "
            "file cannot hold them (truncated or forged)"
        )


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    """One ``.npy`` member, its header checked against its size before the data is read."""
    member = info.filename
    with archive.open(info) as fp:
        magic = fp.read(len(np.lib.format.MAGIC_PREFIX))
        if magic != np.lib.format.MAGIC_PREFIX:
            kind = "a nested archive" if magic.startswith(b"PK") else "not a .npy array"
            raise _Damaged(f"member {member!r} is {kind}")
        version = tuple(fp.read(2))
        if version == (1, 0):
            read_header = np.lib.format.read_array_header_1_0
        elif version == (2, 0):
            read_header = np.lib.format.read_array_header_2_0
        else:
            raise _Damaged(f"member {member!r} has unsupported .npy format version {version}")
        shape, fortran, dtype = read_header(fp, max_header_size=_MAX_HEADER)
        if dtype.kind not in _NUMERIC_KINDS or dtype.fields is not None or dtype.subdtype:
            raise _Damaged(
                f"member {member!r} has dtype {dtype}; a state dict holds numeric arrays only"
            )
        if any(n < 0 for n in shape):
            raise _Damaged(f"member {member!r} has a negative dimension in shape {shape}")
        nbytes = math.prod(shape) * dtype.itemsize  # Python ints: no overflow
        data_size = info.file_size - fp.tell()
        if nbytes != data_size:
            raise _Damaged(
                f"member {member!r} declares shape {shape} of {dtype} ({nbytes:,} bytes) but "
                f"holds {data_size:,} bytes of data"
            )
        out = np.empty(math.prod(shape), dtype=dtype)  # at most what the file holds
        view = memoryview(out.view(np.uint8))
        got = 0
        while got < nbytes:  # the last read checks the member's CRC
            n = fp.readinto(view[got : got + _CHUNK])
            if not n:
                raise _Damaged(f"member {member!r} ends early (truncated)")
            got += n
        if fp.read(1):
            raise _Damaged(f"member {member!r} has data after its array")
    return out.reshape(shape, order="F" if fortran else "C")


def _match_metadata(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The arrays in the order of the JSON record, which they must match exactly."""
    record = arrays.pop(META_KEY, None)
    if record is None or record.dtype != np.uint8 or record.ndim != 1:
        raise _Damaged("no gpukit metadata record; was it written by gk.nn.save?")
    try:
        meta = json.loads(record.tobytes().decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _Damaged(f"the metadata record is not JSON ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise _Damaged(f"the metadata record is not of format {FORMAT!r}")
    keys, shapes, dtypes = meta.get("keys"), meta.get("shapes"), meta.get("dtypes")
    if not (
        isinstance(keys, list)
        and isinstance(shapes, list)
        and isinstance(dtypes, list)
        and len(keys) == len(shapes) == len(dtypes)
        and all(isinstance(k, str) for k in keys)
        and all(isinstance(s, list) for s in shapes)
        and all(isinstance(d, str) for d in dtypes)
    ):
        raise _Damaged("the metadata record's keys, shapes and dtypes are malformed")
    if len(set(keys)) != len(keys):
        raise _Damaged("the metadata record lists a key twice")
    problems = []
    missing = [k for k in keys if k not in arrays]
    unexpected = [k for k in arrays if k not in keys]
    if missing:
        problems.append(f"arrays listed but absent {missing}")
    if unexpected:
        problems.append(f"arrays not listed {unexpected}")
    for k, shape, dtype in zip(keys, shapes, dtypes, strict=True):
        a = arrays.get(k)
        if a is not None and (list(a.shape) != shape or a.dtype.str != dtype):
            problems.append(f"{k}: listed {tuple(shape)} {dtype}, stored {a.shape} {a.dtype.str}")
    if problems:
        raise _Damaged("it disagrees with its metadata: " + "; ".join(problems))
    return {k: arrays[k] for k in keys}
