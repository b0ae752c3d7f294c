"""The kernel registry is complete, and every .cu file compiles with nvcc."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from kernel_cases import CASES, INTERNAL_CASES

import gpukit as gk
import gpukit_numpy.kernels as references
from gpukit.backend.kernels import INTERNAL_KERNELS, KERNELS, cuda_sources
from gpukit_cupy.cuda_sources import HERE, instantiations

NVCC = shutil.which("nvcc")
TESTS = Path(__file__).parent


def test_registry_is_complete():
    cuda_py = (HERE / "__init__.py").read_text()
    elementwise_py = (HERE / "_elementwise.py").read_text()
    test_text = (TESTS / "test_kernels.py").read_text()
    cased = {kernel for kernel, _, _ in CASES}
    for name, spec in KERNELS.items():
        assert callable(getattr(gk.kernels, name)), name
        assert name in gk.kernels.__all__, name
        assert callable(getattr(references, name)), f"{name}: no NumPy reference"
        assert re.search(rf"^def {name}\(", cuda_py, re.M), f"{name}: no CUDA launcher"
        assert name in cased, f"{name}: no GPU case in tests/kernel_cases.py"
        assert f"gk.kernels.{name}(" in test_text, f"{name}: no reference test"
        if spec.kind != "RawModule":  # CuPy's kernel types, defined in _elementwise.py
            assert spec.source is None and not spec.name_expressions, name
            for kind in spec.kind.split(" + "):
                assert f"cupy.{kind}(" in elementwise_py, f"{name}: no {kind}"
            continue
        assert (HERE / spec.source).is_file(), spec.source
        text = (HERE / spec.source).read_text()
        for expr in spec.name_expressions:
            template = expr.split("<")[0]
            assert re.search(
                rf"__global__ void\s+(__launch_bounds__\([^\n]*\)\s+)?{template}\(", text
            ), expr
            assert f'"{template}<' in cuda_py or f"{template}<" in cuda_py, f"{expr} never launched"
    cu_files = {p.name for p in HERE.glob("*.cu")}
    assert cu_files == set(cuda_sources()), "a .cu file is not in the registry"


def test_internal_kernels_are_complete():
    """Each internal kernel: a documented NumPy reference, a CUDA launcher, a GPU test,
    a case for the sanitizer, and no public function."""
    cuda_py = (HERE / "__init__.py").read_text()
    gpu_tests = (TESTS / "test_kernels_gpu.py").read_text()
    cased = {kernel for kernel, _, _ in INTERNAL_CASES}
    for name, spec in INTERNAL_KERNELS.items():
        assert name in cased, f"{name}: no case in tests/kernel_cases.py's INTERNAL_CASES"
        assert name not in KERNELS and not hasattr(gk.kernels, name), name
        assert getattr(references, name).__doc__, f"{name}: no documented NumPy reference"
        assert re.search(rf"^def {name}\(", cuda_py, re.M), f"{name}: no CUDA launcher"
        assert f'_internal("{name}")' in gpu_tests, f"{name}: no GPU test"
        for expr in spec.name_expressions:
            assert f"{expr.split('<')[0]}<" in cuda_py, f"{expr} never launched"


@pytest.mark.skipif(NVCC is None, reason="nvcc not found on PATH: .cu files not compiled")
@pytest.mark.parametrize("filename", sorted(cuda_sources()))
def test_cuda_source_compiles_for_sm90(filename, tmp_path):
    """Compiles as CuPy would (header pasted), with every name expression instantiated."""
    exprs = tuple(dict.fromkeys(cuda_sources()[filename]))
    unit = tmp_path / "unit.cu"
    unit.write_text(instantiations(filename, exprs))
    ptx = tmp_path / "unit.ptx"
    cmd = [
        NVCC,
        "--ptx",
        "-arch=sm_90",
        "-std=c++17",
        "-Werror",
        "all-warnings",
        "-o",
        str(ptx),
        str(unit),
    ]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    entries = re.findall(r"^\.visible \.entry (\S+?)\(", ptx.read_text(), re.M)
    assert len(entries) == len(exprs), (entries, exprs)
