"""The host compiler driver: CUDA source -> shared library, cached on disk.

``g++ -std=c++17 -O2 -fPIC -shared`` builds the translation unit of
:mod:`cupysim.kernels.source` against ``include/cupysim_cuda.h`` and links it to
the scheduler runtime (``runtime/scheduler.cpp``, built once per sanitizer mode).
Libraries are cached under ``$CUPYSIM_CACHE`` (default ``~/.cache/cupysim``) by a
hash of everything that decides their content: the source, the options, the name
expressions, the sanitizer, the headers, the runtime and the compiler version.
A library is written to a temporary file and renamed into place, so concurrent
processes and threads never load a half-written one (CuPy's kernel cache,
``cupy/cuda/compiler.py``, works the same way).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import shlex
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .errors import CompileError
from .source import TranslationUnit, translation_unit

__all__ = ["Binary", "KernelSpec", "ParamSpec", "build", "cache_dir"]

HERE = Path(__file__).parent
INCLUDE = HERE / "include"
RUNTIME_SOURCE = HERE / "runtime" / "scheduler.cpp"
CXX = os.environ.get("CXX", "g++")
_FORMAT = 1  # bump when the library layout changes

# CUPYSIM_SANITIZE -> (kernel flags, runtime flags). Sanitizer builds run blocks
# on one thread (CUPYSIM_SERIAL): shared memory is then a plain static, which
# AddressSanitizer surrounds with redzones.
_MODE_FLAGS = {
    None: (["-O2"], []),
    "address": (
        [
            "-O1",
            "-g",
            "-fno-omit-frame-pointer",
            "-fsanitize=address,undefined",
            "-fsanitize-recover=address,undefined",
            "-DCUPYSIM_SERIAL",
        ],
        ["-DCUPYSIM_ASAN"],
    ),
    "thread": (["-O1", "-g", "-fsanitize=thread", "-DCUPYSIM_SERIAL"], ["-DCUPYSIM_TSAN"]),
}
# -fno-gnu-unique: template statics (an Entry's parameter table, a templated
# device function's __shared__ array) would otherwise be one object for the
# whole process, shared by every kernel library that instantiates the same name.
_COMMON = [
    "-std=c++17",
    "-fPIC",
    "-shared",
    "-w",
    "-fno-strict-aliasing",
    "-fno-ipa-icf",
    "-fno-gnu-unique",
    "-pthread",
]


def cache_dir() -> Path:
    from .. import runtime

    path = Path(runtime.config.cache or Path.home() / ".cache" / "cupysim")
    path.mkdir(parents=True, exist_ok=True)
    return path


@cache
def _compiler_id() -> str:
    out = subprocess.run([CXX, "--version"], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()[0]


def _digest(*parts: object) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(repr(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def _compile(args: list[str], dest: Path, what: str) -> str:
    """Run the compiler writing to a temporary file, then rename it to ``dest``."""
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=dest.name, suffix=".tmp")
    os.close(fd)
    try:
        proc = subprocess.run(
            [CXX, *args, "-o", tmp], capture_output=True, text=True, errors="replace"
        )
        if proc.returncode:
            raise CompileError(
                f"{what}: {CXX} exited with {proc.returncode}\n"
                f"command: {shlex.join([CXX, *args])}\n{proc.stderr}"
            )
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return proc.stderr


_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _lock_for(key: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def _headers_digest() -> str:
    files = sorted(INCLUDE.rglob("*"))
    return _digest(*[(str(f.relative_to(INCLUDE)), f.read_bytes()) for f in files if f.is_file()])


@cache
def runtime_library(mode: str | None) -> Path:
    """The scheduler runtime for ``mode``, built on first use."""
    flags = ["-O2", "-I", str(INCLUDE), *_MODE_FLAGS[mode][1]]
    key = _digest(_FORMAT, RUNTIME_SOURCE.read_bytes(), _headers_digest(), flags, _compiler_id())
    path = cache_dir() / f"libcupysim_rt-{mode or 'plain'}-{key}.so"
    with _lock_for(str(path)):
        if not path.exists():
            _compile([*_COMMON, *flags, str(RUNTIME_SOURCE)], path, "cupysim runtime")
    # RTLD_GLOBAL: kernel libraries resolve cupysim_cur and the scheduler here.
    ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    return path


def host_options(options: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The NVRTC options that mean something on the host: (compiler flags, preamble).

    Macros (``-D``/``-U``/``-include``) become preamble lines placed after the
    simulator's own header, so a user macro such as ``-DT=float`` reaches the kernel
    source (and CuPy's headers) as it would under NVRTC, without rewriting the
    simulator's header. Include paths and the C++ standard are compiler flags (CuPy
    adds ``--std=c++17`` when none is given, ``cupy/_core/core.pyx:
    assemble_cupy_compiler_options``). Code-generation options (``-arch``,
    ``--use_fast_math``, ``-ftz`` ...) have no host meaning and are ignored.
    """
    flags, preamble, std = [], [], "-std=c++17"
    spellings = {
        "-D": "-D",
        "--define-macro": "-D",
        "-U": "-U",
        "--undefine-macro": "-U",
        "-I": "-I",
        "--include-path": "-I",
        "-include": "-include",
        "--pre-include": "-include",
    }
    it = iter(options)
    for opt in it:
        kind = value = None
        for spelling, canonical in spellings.items():
            if opt == spelling:
                kind, value = canonical, next(it)
            elif opt.startswith(spelling + "="):
                kind, value = canonical, opt[len(spelling) + 1 :]
            elif len(spelling) == 2 and opt.startswith(spelling):
                kind, value = canonical, opt[2:]
            if kind:
                break
        if kind == "-D":
            name, _, body = value.partition("=")
            preamble.append(f"#define {name} {body if _ else 1}")
        elif kind == "-U":
            preamble.append(f"#undef {value}")
        elif kind == "-include":
            preamble.append(f'#include "{value}"')
        elif kind == "-I":
            flags += ["-I", value]
        else:
            for prefix in ("--std=", "-std="):
                if opt.startswith(prefix):
                    std = "-std=" + opt[len(prefix) :]
    return [std, *flags], preamble


@dataclass(frozen=True)
class ParamSpec:
    """One kernel parameter, as the compiled kernel declares it."""

    size: int
    align: int
    offset: int
    kind: int  # cupysim::ParamKind
    type: str

    VALUE, INT, UINT, FLOAT, BOOL, POINTER, CONST_POINTER = range(7)

    @property
    def is_pointer(self) -> bool:
        return self.kind in (self.POINTER, self.CONST_POINTER)


class _ParamInfo(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_uint),
        ("align", ctypes.c_uint),
        ("offset", ctypes.c_uint),
        ("kind", ctypes.c_int),
        ("type", ctypes.c_char_p),
    ]


class LaunchConfig(ctypes.Structure):
    _fields_ = [
        ("grid", ctypes.c_uint * 3),
        ("block", ctypes.c_uint * 3),
        ("dynamic_smem", ctypes.c_size_t),
        ("workers", ctypes.c_int),
        ("ftz", ctypes.c_int),
    ]


_LAUNCH = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(LaunchConfig), ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
)


class _KernelInfo(ctypes.Structure):
    _fields_ = [
        ("fn", ctypes.c_void_p),
        ("symbol", ctypes.c_char_p),
        ("nparams", ctypes.c_int),
        ("params", ctypes.POINTER(_ParamInfo)),
        ("param_bytes", ctypes.c_uint),
        ("launch", _LAUNCH),
        ("max_threads", ctypes.c_int),
    ]


@dataclass(frozen=True)
class KernelSpec:
    """A compiled kernel: its lowered name, parameters and entry point."""

    expression: str  # the name or name expression it was exported under
    symbol: str | None  # the mangled (or extern "C") name
    params: tuple[ParamSpec, ...]
    param_bytes: int
    max_threads: int
    launch: object  # _LAUNCH


_SECTION = re.compile(r"^Relocation section '\.rela\.text\.(\S+)'")
_LOCAL_NAME = re.compile(r"E(\d+)(\w+)$")


def static_shared_memory(obj: Path, dynamic: frozenset[str]) -> dict[str, int]:
    """Static ``__shared__`` bytes of each function of an object file.

    ``__shared__`` variables are function-local statics (``_ZZ<function>E<name>``);
    a kernel uses those its own code and every function it calls refer to, which
    the object's relocations tell (one section per function). The pointers that
    replace ``extern __shared__`` arrays are not shared memory.
    """
    out = subprocess.run(
        ["readelf", "-Wsr", str(obj)], capture_output=True, text=True, check=True
    ).stdout
    sizes: dict[str, int] = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 8 and f[3] in ("TLS", "OBJECT") and f[7].startswith("_ZZ"):
            name = f[7]
            local = _LOCAL_NAME.search(name)
            if "cupysim" in name or (local and local.group(2) in dynamic):
                continue
            sizes[name] = int(f[2], 0)
    refs: dict[str, set[str]] = {}
    current = None
    for line in out.splitlines():
        m = _SECTION.match(line)
        if m:
            current = refs.setdefault(m.group(1), set())
        elif line.startswith("Relocation section"):
            current = None
        elif current is not None:
            f = line.split()
            if len(f) >= 5 and f[2].startswith("R_X86_64_"):
                current.add(f[4])
    totals: dict[str, int] = {}
    for fn in refs:
        seen, stack, used = {fn}, [fn], set()
        while stack:
            for sym in refs.get(stack.pop(), ()):
                if sym in sizes:
                    used.add(sym)
                elif sym in refs and sym not in seen:
                    seen.add(sym)
                    stack.append(sym)
        totals[fn] = sum(sizes[v] for v in used)
    return totals


class Binary:
    """A loaded kernel library."""

    def __init__(self, path: Path, unit: TranslationUnit) -> None:
        self.path = path
        meta = json.loads(path.with_suffix(".json").read_text())
        self.static_smem: dict[str, int] = meta["static_smem"]
        self._lib = ctypes.CDLL(str(path))
        self._global_sizes: dict[str, int] | None = None
        self._lib.cupysim_kernel.restype = ctypes.POINTER(_KernelInfo)
        self.kernels: list[KernelSpec] = []
        for i in range(self._lib.cupysim_kernel_count()):
            info = self._lib.cupysim_kernel(i).contents
            params = tuple(
                ParamSpec(p.size, p.align, p.offset, p.kind, p.type.decode())
                for p in info.params[: info.nparams]
            )
            self.kernels.append(
                KernelSpec(
                    unit.entries[i],
                    info.symbol.decode() if info.symbol else None,
                    params,
                    info.param_bytes,
                    info.max_threads,
                    info.launch,
                )
            )

    def global_symbol(self, name: str) -> tuple[int, int] | None:
        """Address and size of a global (``__device__``/``__constant__``) variable, if
        exported: what ``cuModuleGetGlobal`` returns (the size from the library's symbols)."""
        try:
            ptr = ctypes.addressof(ctypes.c_char.in_dll(self._lib, name))
        except ValueError:
            return None
        if self._global_sizes is None:
            out = subprocess.run(
                ["readelf", "-W", "--dyn-syms", str(self.path)],
                capture_output=True, text=True, check=True,
            ).stdout  # fmt: skip
            self._global_sizes = {
                f[7]: int(f[2], 0)
                for f in (line.split() for line in out.splitlines())
                if len(f) == 8 and f[3] == "OBJECT" and f[6] != "UND"
            }
        return ptr, self._global_sizes.get(name, 0)


_binaries: dict[Path, Binary] = {}


def _build(unit: TranslationUnit, flags: list[str], rt: Path, path: Path) -> None:
    """Compile to an object (one section per function, for the shared-memory
    accounting), write its metadata, link; the library appears last."""
    src = path.with_suffix(".cu.cpp")
    fd, tmp = tempfile.mkstemp(dir=src.parent, prefix=src.name, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(unit.text)
    os.replace(tmp, src)
    obj = path.with_suffix(".o")
    compile_flags = [f for f in flags if f != "-shared"]
    _compile(
        [*compile_flags, "-c", "-ffunction-sections", "-fdata-sections", "-x", "c++", str(src)],
        obj,
        "kernel compilation",
    )
    meta = {"static_smem": static_shared_memory(obj, unit.dynamic_shared)}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".json.tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(meta, f)
    os.replace(tmp, path.with_suffix(".json"))
    _compile([*flags, str(obj), str(rt)], path, "kernel link")
    obj.unlink(missing_ok=True)


def build(
    code: str,
    options: tuple[str, ...] = (),
    name_expressions: tuple[str, ...] | None = None,
    *,
    sanitize: str | None = None,
    cupy_headers: bool = False,
) -> Binary:
    """Compile (or find in the cache) and load ``code``."""
    rt = runtime_library(sanitize)
    host_flags, preamble = host_options(options)
    unit = translation_unit(code, name_expressions, cupy_headers, preamble)
    flags = [*_COMMON, *host_flags, *_MODE_FLAGS[sanitize][0], "-I", str(INCLUDE)]
    key = _digest(_FORMAT, unit.text, flags, sanitize, _headers_digest(), rt.name, _compiler_id())
    path = cache_dir() / f"{key}.so"
    with _lock_for(str(path)):
        binary = _binaries.get(path)
        if binary is None:
            if not path.exists():
                _build(unit, flags, rt, path)
            binary = _binaries[path] = Binary(path, unit)
    return binary
