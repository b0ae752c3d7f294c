"""gk.nn.save never loses a checkpoint; gk.nn.load refuses damaged and hostile files.

Every refused file is a ValueError naming the file and the problem, found before any
allocation larger than the file (checked with tracemalloc), and nothing is unpickled.
"""

from __future__ import annotations

import errno
import io
import os
import pickle
import re
import stat
import tracemalloc
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpukit as gk

META = "__gpukit_nn__"


def _state(rng):
    return {
        "0.weight": rng.standard_normal((6, 4)).astype(np.float32),
        "0.bias": rng.standard_normal(6).astype(np.float32),
        "1.scale": np.arange(3, dtype=np.int64),
    }


def _assert_same(loaded, state):
    assert list(loaded) == list(state)
    for k, v in state.items():
        assert loaded[k].dtype == v.dtype and np.array_equal(loaded[k], v)


def _refused(path, match):
    """load(path) is a ValueError naming the file and matching ``match``."""
    with pytest.raises(ValueError, match=match) as info:
        gk.nn.load(path)
    assert str(info.value).startswith(f"gk.nn.load: {os.fspath(path)!r} is not a valid gpukit")
    return info.value


def _npy(array=None, header=None, data=None):
    """A .npy member: a real array's bytes, or a forged header over some data bytes."""
    buf = io.BytesIO()
    if header is None:
        np.lib.format.write_array(buf, array, allow_pickle=True)
        return buf.getvalue()
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue() + data


def _archive(path, members, *, meta_for=None, compression=zipfile.ZIP_STORED):
    """A zip of ``members`` (name -> bytes), with gk.nn.save's metadata for ``meta_for``."""
    with zipfile.ZipFile(path, "w", compression) as z:
        for name, data in members:
            z.writestr(name, data)
        if meta_for is not None:
            meta = {
                "format": "gpukit.nn.state_dict",
                "version": 1,
                "keys": list(meta_for),
                "shapes": [list(a.shape) for a in meta_for.values()],
                "dtypes": [a.dtype.str for a in meta_for.values()],
            }
            record = np.frombuffer(__import__("json").dumps(meta).encode(), np.uint8)
            z.writestr(f"{META}.npy", _npy(record))
    return path


# -- save: atomic replacement ---------------------------------------------------------------
class _Failing(io.FileIO):
    """A file that accepts ``budget`` bytes, then raises ``error`` (a full disk, Ctrl-C)."""

    budget = 0
    error: BaseException = OSError(errno.ENOSPC, "No space left on device")

    def write(self, data):
        if len(data) > type(self).budget:
            raise type(self).error
        type(self).budget -= len(data)
        return super().write(data)


@pytest.fixture
def checkpoint(tmp_path, rng):
    """A directory holding one good checkpoint; yields (path, its state, its bytes)."""
    state = _state(rng)
    path = tmp_path / "model.npz"
    gk.nn.save(state, path)
    return path, state, path.read_bytes()


def _intact(path, state, raw):
    assert path.read_bytes() == raw
    _assert_same(gk.nn.load(path), state)
    assert sorted(os.listdir(path.parent)) == [path.name]  # no temporary file left behind


@pytest.mark.parametrize(
    "error",
    [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()],
    ids=["disk_full", "ctrl_c"],
)
@pytest.mark.parametrize("budget", [0, 100, 1000])
def test_failure_while_writing_keeps_the_previous_checkpoint(
    checkpoint, rng, monkeypatch, error, budget
):
    path, state, raw = checkpoint
    monkeypatch.setattr(_Failing, "budget", budget)
    monkeypatch.setattr(_Failing, "error", error)
    monkeypatch.setattr(os, "fdopen", lambda fd, mode: _Failing(fd, "w"))
    with pytest.raises(type(error)) as info:
        gk.nn.save(_state(rng), path)
    assert info.value is error
    monkeypatch.undo()
    _intact(path, state, raw)


def test_failure_to_sync_keeps_the_previous_checkpoint(checkpoint, rng, monkeypatch):
    path, state, raw = checkpoint

    def eio(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", eio)
    with pytest.raises(OSError, match="Input/output error"):
        gk.nn.save(_state(rng), path)
    monkeypatch.undo()
    _intact(path, state, raw)


def test_failure_converting_a_parameter_keeps_the_previous_checkpoint(checkpoint, rng):
    path, state, raw = checkpoint

    class Broken:
        def __array__(self, dtype=None, copy=None):
            raise RuntimeError("device lost")

    with pytest.raises(RuntimeError, match="device lost"):
        gk.nn.save({**_state(rng), "z": Broken()}, path)
    with pytest.raises(ValueError, match="only numeric arrays"):
        gk.nn.save({**_state(rng), "z": np.array(["a"])}, path)
    _intact(path, state, raw)


def test_save_replaces_and_syncs(checkpoint, rng, monkeypatch):
    path, _, _ = checkpoint
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    new = _state(rng)
    gk.nn.save(new, path)
    assert len(synced) == 2  # the file, then its directory
    _assert_same(gk.nn.load(path), new)
    assert sorted(os.listdir(path.parent)) == [path.name]


def test_save_keeps_permissions_and_follows_links(tmp_path, rng):
    state = _state(rng)
    fresh = tmp_path / "fresh.npz"
    gk.nn.save(state, fresh)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask  # as open() would create it
    fresh.chmod(0o640)
    gk.nn.save(state, fresh)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o640
    link = tmp_path / "latest.npz"
    link.symlink_to(fresh)
    gk.nn.save({"w": np.ones(2)}, link)
    assert link.is_symlink() and list(gk.nn.load(fresh)) == ["w"]


def test_save_and_load_argument_types(tmp_path):
    with pytest.raises(TypeError, match=r"^gk\.nn\.save: obj must be a gk\.nn\.Module .* got int"):
        gk.nn.save(42, tmp_path / "x.npz")
    with pytest.raises(TypeError, match=r"^gk\.nn\.save: path must be a str or os\.PathLike"):
        gk.nn.save({"w": np.ones(1)}, 42)
    with pytest.raises(TypeError, match=r"^gk\.nn\.load: path must be a str or os\.PathLike"):
        gk.nn.load(None)
    with pytest.raises(ValueError, match="not a usable parameter name"):
        gk.nn.save({"__gpukit_nn__": np.zeros(1)}, tmp_path / "s.npz")
    with pytest.raises(FileNotFoundError):  # the path, not the content: an OSError
        gk.nn.load(tmp_path / "missing.npz")
    assert os.listdir(tmp_path) == []


# -- load: damaged and hostile files --------------------------------------------------------
def test_empty_random_and_foreign_files(tmp_path, rng):
    path = tmp_path / "f.npz"
    path.write_bytes(b"")
    _refused(path, "the file is empty")
    path.write_bytes(rng.bytes(4096))
    _refused(path, "not a zip archive")
    path.write_bytes(pickle.dumps({"0.weight": np.zeros(2)}))
    _refused(path, "not a zip archive")
    np.save(tmp_path / "bare.npy", np.zeros(3))
    _refused(tmp_path / "bare.npy", "not a zip archive")
    np.savez(path, w=np.zeros(2))
    _refused(path, "no gpukit metadata record")


def test_a_pickle_inside_is_refused_and_never_run(tmp_path):
    ran = []

    class Payload:
        def __reduce__(self):
            return ran.append, ("unpickled",)

    path = tmp_path / "evil.npz"
    np.savez(path, **{"0.weight": np.array([Payload()], dtype=object)})
    _refused(path, r"member '0\.weight\.npy' has dtype object; a state dict holds numeric")
    assert ran == []


@pytest.mark.parametrize(
    "array",
    [np.array(["a", "b"]), np.zeros(2, "datetime64[s]"), np.zeros(2, [("a", "f4"), ("b", "i4")]),
     np.zeros(2, "V8"), np.zeros(2, "S3")],
    ids=["str", "datetime", "structured", "void", "bytes"],
)  # fmt: skip
def test_non_numeric_members_are_refused(tmp_path, array):
    path = _archive(tmp_path / "m.npz", [("w.npy", _npy(array))], meta_for={"w": array})
    _refused(path, re.escape(f"member 'w.npy' has dtype {array.dtype}; a state dict holds"))


def test_a_header_claiming_a_trillion_elements_allocates_nothing(tmp_path):
    header = {"descr": "<f8", "fortran_order": False, "shape": (10**12,)}
    data = np.zeros(10).tobytes()
    claim = np.empty(0, dtype="<f8")
    path = _archive(tmp_path / "big.npz", [("w.npy", _npy(header=header, data=data))])
    tracemalloc.start()
    try:
        _refused(path, r"declares shape \(1000000000000,\) of float64 \(8,000,000,000,000 bytes\)"
                 r" but holds 80 bytes")  # fmt: skip
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20 and claim.size == 0


def test_a_zip_directory_declaring_more_than_the_file_holds(tmp_path, rng):
    path = tmp_path / "m.npz"
    gk.nn.save(_state(rng), path)
    raw = bytearray(path.read_bytes())
    # forge the central directory's sizes of the first member: 2**31 - 1 bytes each
    start = raw.index(b"PK\x01\x02")
    raw[start + 20 : start + 28] = (2**31 - 1).to_bytes(4, "little") * 2
    path.write_bytes(bytes(raw))
    tracemalloc.start()
    try:
        _refused(path, r"member '0\.weight\.npy' declares 2,147,483,647 bytes but the")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_duplicate_members_are_refused(tmp_path):
    w = np.ones(3)
    with pytest.warns(UserWarning, match="Duplicate name"):
        path = _archive(tmp_path / "d.npz", [("w.npy", _npy(w)), ("w.npy", _npy(2 * w))],
                        meta_for={"w": w})  # fmt: skip
    _refused(path, r"member 'w\.npy' appears twice")


def test_nested_archives_are_refused(tmp_path, rng):
    inner = tmp_path / "inner.npz"
    gk.nn.save(_state(rng), inner)
    nested = _archive(tmp_path / "n1.npz", [("inner.npz", inner.read_bytes())])
    _refused(nested, r"member 'inner\.npz' is a nested archive, not a \.npy array")
    disguised = _archive(tmp_path / "n2.npz", [("w.npy", inner.read_bytes())])
    _refused(disguised, r"member 'w\.npy' is a nested archive")
    other = _archive(tmp_path / "n3.npz", [("README", b"hello")])
    _refused(other, r"member 'README' is a file, not a \.npy array")


def test_compressed_members_are_refused_as_possible_zip_bombs(tmp_path):
    w = np.zeros(10**6)  # 8 MB of zeros deflate to ~8 kB
    path = _archive(tmp_path / "bomb.npz", [("w.npy", _npy(w))], meta_for={"w": w},
                    compression=zipfile.ZIP_DEFLATED)  # fmt: skip
    assert path.stat().st_size < w.nbytes // 100
    tracemalloc.start()
    try:
        _refused(path, r"member 'w\.npy' is compressed \(method 8\); gk\.nn\.save writes unc")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_encrypted_members_are_refused(tmp_path):
    path = _archive(tmp_path / "e.npz", [("w.npy", _npy(np.ones(2)))])
    raw = bytearray(path.read_bytes())
    for signature, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # local, central
        raw[raw.index(signature) + flags_at] |= 0x1  # general purpose bit 0: encrypted
    path.write_bytes(bytes(raw))
    _refused(path, r"member 'w\.npy' is encrypted")


def test_metadata_must_be_well_formed_and_agree(tmp_path, rng):
    path = tmp_path / "m.npz"
    gk.nn.save(_state(rng), path)
    with zipfile.ZipFile(path, "a") as z:  # smuggle in an unlisted array
        z.writestr("extra.npy", _npy(np.zeros(3)))
    _refused(path, r"arrays not listed \['extra'\]")
    w = np.ones(2)
    bad = _archive(tmp_path / "b.npz", [("w.npy", _npy(w)),
                   (f"{META}.npy", _npy(np.frombuffer(b'{"format": 1', np.uint8)))])  # fmt: skip
    _refused(bad, "the metadata record is not JSON")
    liar = _archive(tmp_path / "l.npz", [("w.npy", _npy(w))], meta_for={"w": np.ones(3)})
    _refused(liar, r"w: listed \(3,\) <f8, stored \(2,\) <f8")


# -- load: fuzzed corruption of a good file -------------------------------------------------
@pytest.fixture(scope="module")
def good_file(tmp_path_factory):
    state = _state(np.random.default_rng(0))
    path = tmp_path_factory.mktemp("good") / "m.npz"
    gk.nn.save(state, path)
    return state, path.read_bytes(), path.with_name("corrupt.npz")


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_corrupted_files_load_exactly_or_raise_valueerror(good_file, data):
    state, raw, path = good_file
    kind = data.draw(st.sampled_from(["truncate", "flip", "splice", "zero_run"]))
    n = len(raw)
    if kind == "truncate":
        bad = raw[: data.draw(st.integers(0, n - 1))]
    elif kind == "flip":
        bad = bytearray(raw)
        for i in data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=8)):
            bad[i] ^= data.draw(st.integers(1, 255))
        bad = bytes(bad)
    elif kind == "splice":
        i = data.draw(st.integers(0, n))
        bad = raw[:i] + data.draw(st.binary(min_size=1, max_size=64)) + raw[i:]
    else:
        i = data.draw(st.integers(0, n - 1))
        bad = raw[:i] + bytes(data.draw(st.integers(1, 64))) + raw[i + 64 :]
    path.write_bytes(bad)
    tracemalloc.start()
    try:
        try:
            loaded = gk.nn.load(path)
        except ValueError as exc:
            assert str(exc).startswith(f"gk.nn.load: {str(path)!r} is not a valid gpukit")
        else:  # the damage hit bytes nothing depends on (a timestamp, a comment)
            _assert_same(loaded, state)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * n + (1 << 20)
