"""The ``gpukit`` command line: ``gpukit info [--json] [--capabilities [OPERATION]]``,
``gpukit bench [--quick] ...``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from ._version import __version__

__all__ = ["build_parser", "main"]


def __dir__() -> list[str]:  # the public API only, not the imports
    return list(__all__)


def _info(args: argparse.Namespace) -> int:
    if args.capabilities is not None:
        return _capabilities(args.capabilities or None, args.json)
    from ._info import collect, render

    info = collect()
    print(json.dumps(info, indent=2) if args.json else render(info))
    return 0


def _capabilities(operation: str | None, as_json: bool) -> int:
    """``gpukit info --capabilities [OPERATION]``: the capability tables, or JSON cells."""
    from ._capabilities import capabilities, report

    try:
        if as_json:
            cells = [
                {**c._asdict(), "error": c.error and c.error.__name__, "status": c.status}
                for c in capabilities(operation)
            ]
            print(json.dumps(cells, indent=2))
        else:
            print(report(operation))
    except ValueError as exc:
        print(f"gpukit info: {exc}", file=sys.stderr)
        return 2
    return 0


def _bench_list() -> str:
    """The names ``--cases`` and ``--impls`` accept, with what each case times."""
    from ._bench.cases import CASES
    from ._bench.runners import NAMES

    width = max(len(c.name) for c in CASES)
    lines = ["cases (--cases):"]
    lines += [f"  {c.name:<{width}}  {c.shape(c.quick[-1])}  [{c.unit}]" for c in CASES]
    lines += ["implementations (--impls):", *(f"  {name}" for name in NAMES)]
    return "\n".join(lines)


def _bench(args: argparse.Namespace) -> int:
    from ._bench import run
    from ._bench.report import render

    if args.list:
        print(_bench_list())
        return 0

    if args.plot:  # before the benchmarks run, not after
        from ._bench.plot import check

        try:
            check(args.plot)
        except (ImportError, ValueError) as exc:  # no matplotlib: 1; an unwritable path: 2
            print(f"gpukit bench: {exc}", file=sys.stderr)
            return 1 if isinstance(exc, ImportError) else 2
    split = lambda text: [s for s in text.split(",") if s] if text else None  # noqa: E731
    try:
        report = run(
            quick=args.quick,
            cases=split(args.cases),
            impls=split(args.impls),
            progress=False if args.no_progress else None,
        )
    except ValueError as exc:
        print(f"gpukit bench: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.json else render(report))
    if args.plot:
        from ._bench.plot import plot

        plot(report, args.plot)
        print(f"plot written to {args.plot}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``gpukit`` command.

    Returns
    -------
    argparse.ArgumentParser
        The parser, with one sub-command per action (``info``, ``bench``).

    Examples
    --------
    >>> from gpukit.cli import build_parser
    >>> build_parser().parse_args(["info", "--json"]).json
    True
    """
    parser = argparse.ArgumentParser(
        prog="gpukit", description="gpukit: scientific computing on NumPy/SciPy and CuPy"
    )
    parser.add_argument("--version", action="version", version=f"gpukit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="backends, devices, versions and BLAS of this machine")
    info.add_argument("--json", action="store_true", help="print machine-readable JSON")
    info.add_argument(
        "--capabilities",
        nargs="?",
        const="",
        metavar="OPERATION",
        help="what runs on which backend, dtype and array kind: every operation's table, "
        "or one module's (gk.fft) or one operation's (gk.linalg.solve) cells",
    )
    info.set_defaults(func=_info)
    bench = sub.add_parser(
        "bench",
        help="time the main operations on every backend and peer against this machine's ceilings",
    )
    bench.add_argument("--quick", action="store_true", help="small sizes, under a minute")
    bench.add_argument("--json", action="store_true", help="print machine-readable JSON")
    bench.add_argument("--plot", metavar="FILE.png", help="draw throughput vs size")
    bench.add_argument(
        "--cases", metavar="A,B", help="only these cases, comma-separated (see --list)"
    )
    bench.add_argument(
        "--impls", metavar="A,B", help="only these implementations, comma-separated (see --list)"
    )
    bench.add_argument(
        "--list", action="store_true", help="list the cases and implementations, and exit"
    )
    bench.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    bench.set_defaults(func=_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``gpukit`` command; return its exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after ``gpukit``; ``sys.argv[1:]`` when omitted.

    Returns
    -------
    int
        The exit status: 0 on success; 1 when the reader of the output went away
        (``gpukit info | head``), which ends the command quietly.

    Examples
    --------
    >>> from gpukit.cli import main
    >>> main(["info"])  # doctest: +ELLIPSIS
    gpukit ...
    Backends:
      numpy      available    1 device(s)  [builtin]
    ...
    0
    """
    args = build_parser().parse_args(argv)
    try:
        status = args.func(args)
        sys.stdout.flush()  # a reader gone away shows here, not in the flush at exit
    except BrokenPipeError:
        # What Python's docs recommend for SIGPIPE (signal module, "Note on SIGPIPE"): no
        # traceback, and stdout pointed at devnull so the flush at exit cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
