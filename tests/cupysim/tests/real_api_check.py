"""Check names and signatures (JSON on stdin) against the installed, real CuPy.

Run by test_api_honesty.py in a subprocess whose path does not hold the simulator.
CuPy imports without a GPU; the library modules that need cuBLAS/cuSOLVER/cuSPARSE at
import (cupy.cublas, cupyx.lapack, cupyx.scipy.linalg) get placeholder library modules
when those libraries are missing, so their Python-level names and signatures can be read.
Prints one line per problem; nothing when the simulator invents nothing.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import sys
import types


class _Placeholder(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return 0


def _stub_missing_libraries() -> None:
    import cupy_backends.cuda.libs as libs

    for lib in ("cublas", "cusolver", "cusparse", "curand"):
        try:
            importlib.import_module(f"cupy_backends.cuda.libs.{lib}")
        except ImportError:
            stub = _Placeholder(f"cupy_backends.cuda.libs.{lib}")
            sys.modules[stub.__name__] = stub
            setattr(libs, lib, stub)


def _params(obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    names = [p.name for p in sig.parameters.values()
             if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY)]  # fmt: skip
    open_ = any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in sig.parameters.values())
    return names, open_


def _module(name: str):
    """The real module: imported, or reached as an attribute (cupy.cuda.driver)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        parent, _, attr = name.rpartition(".")
        return getattr(_module(parent), attr)


class _Binary:
    """Names of a compiled module that cannot load here (NCCL needs libnccl): Cython keeps
    each public name as a string in the extension, so it is looked up there."""

    def __init__(self, module_name: str) -> None:
        spec = importlib.util.find_spec(module_name)
        with open(spec.origin, "rb") as f:
            self.data = f.read()

    def has(self, path: str) -> bool:
        import re

        return all(
            re.search(rb"(?<![A-Za-z0-9_])" + p.encode() + rb"(?![A-Za-z0-9_])", self.data)
            for p in path.split(".")
        )


# Compiled modules whose import loads a CUDA library this machine may lack.
_NEEDS_A_LIBRARY = {"cupy.cuda.cufft"}


def main() -> None:
    import cupy

    assert "cupysim" not in cupy.__file__, cupy.__file__
    _stub_missing_libraries()
    problems = []
    for entry in json.load(sys.stdin):
        module, path, sim_params = entry["module"], entry["path"], entry["params"]
        try:
            obj = _module(module)
        except Exception as exc:
            if module in _NEEDS_A_LIBRARY:  # cupy.cuda.cufft loads libcufft at import
                if not _Binary(module).has(path):
                    problems.append(f"{module}.{path}: not in the real CuPy's compiled module")
                continue
            problems.append(f"{module}: real module does not import ({exc!r:.80})")
            continue
        if module == "cupy.cuda.nccl" and not obj.available and path != "available":
            if not _Binary("cupy_backends.cuda.libs.nccl").has(path):
                problems.append(f"{module}.{path}: not in the real CuPy's NCCL module")
            continue
        for part in path.split("."):
            try:
                found = hasattr(obj, part)
            except ImportError:  # a lazily loaded library module (cupy.cuda.cufft)
                found = f"{module}.{part}" in _NEEDS_A_LIBRARY
                obj = None
                if not found:
                    problems.append(f"{module}.{path}: its real module does not import")
                break
            if not found and hasattr(obj, "__path__"):  # a package: maybe a submodule
                # a submodule the simulator's process imported earlier, which the real
                # CuPy leaves to an explicit import (cupy.cublas)
                found = importlib.util.find_spec(f"{obj.__name__}.{part}") is not None
                if found:
                    importlib.import_module(f"{obj.__name__}.{part}")
            if not found:
                problems.append(f"{module}.{path}: not in the real CuPy")
                obj = None
                break
            obj = getattr(obj, part)
        if obj is None or sim_params is None:
            continue
        real = _params(obj)
        if real is None or real[1]:
            continue  # unreadable, or the real one takes anything
        extra = [p for p in sim_params if p not in real[0] and p != "self"]
        if extra:
            problems.append(f"{module}.{path}: parameters {extra} not in the real {real[0]}")
    print("\n".join(problems))


if __name__ == "__main__":
    main()
