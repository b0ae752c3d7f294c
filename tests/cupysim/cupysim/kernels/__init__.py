"""CUDA C++ executed on the host: compiler driver, scheduler runtime, launcher."""

from .errors import CompileError, KernelArgumentError, KernelFault, SanitizerError

__all__ = ["CompileError", "KernelArgumentError", "KernelFault", "SanitizerError"]
