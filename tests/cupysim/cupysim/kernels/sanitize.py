"""Running kernels under AddressSanitizer/UBSan or ThreadSanitizer.

``CUPYSIM_SANITIZE=address`` compiles kernels with ``-fsanitize=address,undefined``
(the analogue of ``compute-sanitizer --tool memcheck``), ``thread`` with
``-fsanitize=thread`` (``--tool racecheck``). The Python interpreter is not built
with a sanitizer, so its process must load the sanitizer runtime before anything
else: run it through this module, which sets ``LD_PRELOAD`` and the options and
execs the command::

    python -m cupysim.kernels.sanitize address -- python tools/run_kernels_once.py
    python -m cupysim.kernels.sanitize thread -- python -m pytest --cupy=sim tests/...

What it sets, and why:

* ``LD_PRELOAD`` = ``g++ -print-file-name=libasan.so`` (or ``libtsan.so``): the
  runtime must be the first library of the process (ASan refuses otherwise; TSan
  must see every thread created). The command is started with the real
  interpreter (``sys.executable``), never a shell wrapper such as a pyenv shim,
  which crashes under a preloaded TSan.
* ``ASAN_OPTIONS=detect_leaks=0:halt_on_error=0:...``: CPython's own allocations
  look like leaks; kernels are built with ``-fsanitize-recover`` so a report does
  not end the process.
* ``TSAN_OPTIONS=ignore_noninstrumented_modules=1:...``: only kernel code is
  instrumented; NumPy's and BLAS's memcpy calls are not races to report.
* ``log_path``: reports go to a file the launcher reads after each launch, so a
  report becomes a :class:`SanitizerError` naming the kernel, in the test that
  launched it (the exit status stays non-zero: TSan's ``exitcode``). GCC's
  sanitizers symbolize with libbacktrace, which knows only the libraries loaded
  at their first report; frames of kernel libraries loaded later are symbolized
  here with ``addr2line``.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from functools import cache
from pathlib import Path

from .errors import SanitizerError

__all__ = ["check_loaded", "environment", "raise_new_reports", "sanitizer_mode"]

MODES = ("address", "thread")
_RUNTIME_LIB = {"address": "libasan.so", "thread": "libtsan.so"}
_INIT_SYMBOL = {"address": "__asan_init", "thread": "__tsan_init"}
_OPTIONS = {
    "address": {
        "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=0:detect_odr_violation=0:"
        "allocator_may_return_null=1",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=0",
    },
    "thread": {
        "TSAN_OPTIONS": "ignore_noninstrumented_modules=1:report_signal_unsafe=0:"
        "halt_on_error=0:second_deadlock_stack=1",
    },
}


def sanitizer_mode() -> str | None:
    from .. import runtime

    return runtime.config.sanitize


@cache
def _runtime_path(mode: str) -> str:
    cxx = os.environ.get("CXX", "g++")
    out = subprocess.run(
        [cxx, f"-print-file-name={_RUNTIME_LIB[mode]}"], capture_output=True, text=True, check=True
    )
    return os.path.realpath(out.stdout.strip())


def environment(mode: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a process whose kernels run under sanitizer ``mode``."""
    if mode not in MODES:
        raise ValueError(f"sanitizer mode must be one of {MODES}, got {mode!r}")
    env = dict(os.environ if base is None else base)
    log_dir = tempfile.mkdtemp(prefix=f"cupysim-{mode}-")
    log = os.path.join(log_dir, "report")
    env["LD_PRELOAD"] = _runtime_path(mode)
    for var, opts in _OPTIONS[mode].items():
        env[var] = f"{opts}:log_path={log}"
    env["CUPYSIM_SANITIZE"] = mode
    return env


@cache
def check_loaded(mode: str) -> None:
    """Raise unless the sanitizer runtime of ``mode`` is loaded in this process."""
    if not hasattr(ctypes.CDLL(None), _INIT_SYMBOL[mode]):
        raise RuntimeError(
            f"CUPYSIM_SANITIZE={mode}: this process was not started with the {mode} sanitizer "
            "runtime preloaded, so sanitized kernels cannot load. Start it with "
            f"`python -m cupysim.kernels.sanitize {mode} -- <command>` (it sets LD_PRELOAD "
            "and the sanitizer options)."
        )


def _report_file(mode: str) -> Path | None:
    var = "ASAN_OPTIONS" if mode == "address" else "TSAN_OPTIONS"
    for opt in os.environ.get(var, "").split(":"):
        if opt.startswith("log_path="):
            return Path(f"{opt[len('log_path=') :]}.{os.getpid()}")
    return None


_seen: dict[Path, int] = {}
_seen_lock = threading.Lock()


_FRAME = re.compile(r"(0x[0-9a-f]+) +\((/\S+\.so)\+(0x[0-9a-f]+)\)")


def _symbolize(text: str) -> str:
    """Name the unsymbolized frames ``0xADDR (/path/lib.so+0xOFF)`` with addr2line."""
    addr2line = shutil.which("addr2line")
    if addr2line is None:
        return text

    def name(m: re.Match) -> str:
        out = subprocess.run(
            [addr2line, "-Cfe", m.group(2), m.group(3)], capture_output=True, text=True
        )
        lines = out.stdout.split("\n")
        if out.returncode or len(lines) < 2 or lines[0].startswith("??"):
            return m.group(0)
        return f"{m.group(1)} in {lines[0]} {lines[1]}"

    return _FRAME.sub(name, text)


def raise_new_reports(kernel: str) -> None:
    """Raise :class:`SanitizerError` if the sanitizer reported since the last launch."""
    mode = sanitizer_mode()
    if mode is None:
        return
    path = _report_file(mode)
    if path is None or not path.exists():
        return
    with _seen_lock:
        start = _seen.get(path, 0)
        with open(path, "rb") as f:
            f.seek(start)
            text = f.read()
        _seen[path] = start + len(text)
    if text.strip():
        raise SanitizerError(
            f"{'AddressSanitizer/UBSan' if mode == 'address' else 'ThreadSanitizer'} report "
            f"during kernel {kernel}:\n{_symbolize(text.decode(errors='replace'))}"
        )


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in MODES:
        print(
            f"usage: python -m cupysim.kernels.sanitize {{{'|'.join(MODES)}}} [--] command ...",
            file=sys.stderr,
        )
        return 2
    mode, command = argv[0], argv[1:]
    if command and command[0] == "--":
        command = command[1:]
    if command and os.path.basename(command[0]).startswith("python"):
        command = [sys.executable, *command[1:]]
    env = environment(mode)
    os.execvpe(command[0], command, env)
    return 127  # unreachable


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
