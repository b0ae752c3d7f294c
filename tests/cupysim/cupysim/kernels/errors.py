"""Errors the kernel simulator raises where a GPU would misbehave silently."""

from __future__ import annotations

__all__ = ["CompileError", "KernelArgumentError", "KernelFault", "SanitizerError"]


class CompileError(RuntimeError):
    """The host compiler rejected a kernel (raised to users as CuPy's CompileException)."""


class KernelArgumentError(TypeError):
    """A kernel argument does not match the compiled parameter it is passed to.

    ``cuLaunchKernel`` copies as many bytes as the parameter declares from whatever
    was passed, so on a GPU the kernel silently reads garbage.
    """


class KernelFault(RuntimeError):
    """A launch that can never complete or is undefined on a GPU: a barrier not every
    thread reaches, a warp operation whose lanes disagree or read an inactive lane."""


class SanitizerError(RuntimeError):
    """AddressSanitizer, UndefinedBehaviorSanitizer or ThreadSanitizer reported an
    error during a launch (``CUPYSIM_SANITIZE``); the message holds the report."""
