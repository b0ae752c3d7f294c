"""The ``gpukit`` command line: ``gpukit info [--json]``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

__all__ = ["build_parser", "main"]


def _info(args: argparse.Namespace) -> int:
    from ._info import collect, render

    info = collect()
    print(json.dumps(info, indent=2) if args.json else render(info))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``gpukit`` command.

    Returns
    -------
    argparse.ArgumentParser
        The parser, with one sub-command per action (``info``).

    Examples
    --------
    >>> from gpukit.cli import build_parser
    >>> build_parser().parse_args(["info", "--json"]).json
    True
    """
    parser = argparse.ArgumentParser(
        prog="gpukit", description="gpukit: scientific computing on NumPy/SciPy and CuPy"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="backends, devices, versions and BLAS of this machine")
    info.add_argument("--json", action="store_true", help="print machine-readable JSON")
    info.set_defaults(func=_info)
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
        The exit status: 0 on success.

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
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
