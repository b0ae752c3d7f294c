"""An *estimate* of GPU time from a :mod:`cupysim.tracing` trace: counts times constants.

Nothing here is measured. For a trace (or its summary), on a named GPU::

    time = launch overhead x (device operations + copies)
         + sum over kernels and library calls of max(bytes / memory bandwidth, flops / peak)
         + sync latency x host synchronisations
         + host<->device bytes / PCIe bandwidth + peer bytes / NVLink bandwidth

The terms are added as if nothing overlapped (the host launching while the GPU runs, copies
beside kernels); a GPU that overlaps them well is faster, short kernels that do not reach
peak bandwidth are slower. The point is the ratio of the terms: on gpukit's small problems
the first and third dominate, and they are the counts the budgets bound.

Constants and their sources (also docs/gpu_cost.rst):

* Memory bandwidth. H100 SXM5 80GB: 3.35 TB/s HBM3; H200 SXM 141GB: 4.8 TB/s HBM3e.
  NVIDIA H100 Tensor Core GPU datasheet
  (https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet) and
  NVIDIA H200 Tensor Core GPU datasheet (https://www.nvidia.com/en-us/data-center/h200/).
* Peak FLOP/s, the same for both (same GH100 compute; the datasheets' SXM columns, dense:
  the "with sparsity" figures halved): FP64 34 TFLOP/s (vector), FP64 Tensor Core 67,
  FP32 67, TF32 Tensor Core 494.7, FP16/BF16 Tensor Core 989.4. A float64 GEMM uses the
  FP64 Tensor Cores; float32 GEMMs without TF32 run at the FP32 rate.
* Interconnect. PCIe Gen5 x16: 32 GT/s x 16 lanes, about 64 GB/s per direction (PCI-SIG,
  PCI Express Base Specification 5.0; the datasheets list "PCIe Gen5: 128 GB/s", both
  directions). NVLink 4 between SXM GPUs: 900 GB/s in total, 450 GB/s per direction (the
  same datasheets).
* Launch overhead: 5 us of host time per operation. NVIDIA's "Getting Started with CUDA
  Graphs" (https://developer.nvidia.com/blog/cuda-graphs/) measures about 3.8 us per
  back-to-back launch of a short kernel from C++; CuPy adds its Python dispatch on top
  (issue 30 and /work/shared/GPU.md: 5-10 us per launch through CuPy): 5 us is the low
  end of that range.
* Sync latency: 6 us per host synchronisation. The same NVIDIA post: a short kernel
  followed by ``cudaStreamSynchronize`` costs 9.6 us per iteration against 3.8 us without
  the synchronisation, so about 6 us of a drained queue and wake-up per sync.
"""

from __future__ import annotations

from dataclasses import dataclass

from .tracing import Summary, Trace

TB = 1e12
GB = 1e9
US = 1e-6

_GH100_PEAK = {  # FLOP/s, dense, SXM (datasheets above)
    "float64": 67 * TB,  # GEMMs: FP64 Tensor Core
    "float64-vector": 34 * TB,
    "float32": 67 * TB,
    "tf32": 494.7 * TB,
    "float16": 989.4 * TB,
    "bfloat16": 989.4 * TB,
}


@dataclass(frozen=True)
class GPU:
    """The constants of one GPU model (see the module docstring for their sources)."""

    name: str
    memory_bandwidth: float  # bytes/s
    peak: dict  # dtype name -> FLOP/s
    pcie: float = 64 * GB  # bytes/s per direction
    nvlink: float = 450 * GB  # bytes/s per direction
    launch_overhead: float = 5 * US
    sync_latency: float = 6 * US


GPUS = {
    "H100": GPU("NVIDIA H100 SXM5 80GB", 3.35 * TB, _GH100_PEAK),
    "H200": GPU("NVIDIA H200 SXM 141GB", 4.8 * TB, _GH100_PEAK),
}


@dataclass(frozen=True)
class Estimate:
    """Estimated seconds per unit of work, by term. An estimate, not a measurement."""

    gpu: str
    launch: float
    kernels: float
    syncs: float
    copies: float

    @property
    def total(self) -> float:
        return self.launch + self.kernels + self.syncs + self.copies

    def __sub__(self, other: Estimate) -> Estimate:
        return Estimate(self.gpu, *(getattr(self, k) - getattr(other, k) for k in _TERMS))

    def __truediv__(self, per: float) -> Estimate:
        return Estimate(self.gpu, *(getattr(self, k) / per for k in _TERMS))

    def __str__(self) -> str:
        return (
            f"estimated (not measured) on {self.gpu}: {self.total / US:,.1f} us = launches "
            f"{self.launch / US:,.1f} + kernels {self.kernels / US:,.1f} + syncs "
            f"{self.syncs / US:,.1f} + copies {self.copies / US:,.1f}"
        )


_TERMS = ("launch", "kernels", "syncs", "copies")


def _peak(gpu: GPU, dtype: str | None) -> float:
    key = {"complex64": "float32", "complex128": "float64"}.get(dtype or "", dtype or "")
    return gpu.peak.get(key, gpu.peak["float32"])


def estimate(trace: Trace, gpu: str = "H100", per: float = 1) -> Estimate:
    """The estimated time of ``trace`` on ``gpu`` ("H100" or "H200"), per ``per`` units.

    Examples
    --------
    >>> import cupy, cupysim
    >>> x = cupy.ones((1024, 1024), dtype=cupy.float32)
    >>> with cupysim.trace() as t:
    ...     y = x @ x
    >>> e = cupysim.estimate(t, "H100")
    >>> e.launch > 0 and e.kernels > 0
    True
    """
    if gpu not in GPUS:
        raise ValueError(f"gpu must be one of {sorted(GPUS)}, not {gpu!r}")
    g = GPUS[gpu]
    kernel_s = 0.0
    for e in trace.events:
        if e.kind in ("kernel", "library", "memset"):
            t_mem = e.nbytes / g.memory_bandwidth
            t_flop = e.flops / _peak(g, e.dtype) if e.flops else 0.0
            kernel_s += max(t_mem, t_flop)
        elif e.kind == "copy" and e.name == "device to device":
            kernel_s += 2 * e.nbytes / g.memory_bandwidth  # read and written
    return _from_summary(g, trace.summary(), kernel_s, per)


def _from_summary(g: GPU, s: Summary, kernel_s: float, per: float) -> Estimate:
    launches = s.device_ops + s.h2d_copies + s.d2h_copies
    return Estimate(
        gpu=g.name,
        launch=launches * g.launch_overhead / per,
        kernels=kernel_s / per,
        syncs=s.syncs * g.sync_latency / per,
        copies=((s.h2d_bytes + s.d2h_bytes) / g.pcie + s.peer_bytes / g.nvlink) / per,
    )
