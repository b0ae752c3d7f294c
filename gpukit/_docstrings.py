"""Docstring paragraphs shared by several public functions, so each contract is written once.

A docstring names a shared paragraph by a line holding only its placeholder (``{name}``),
indented as the paragraph must be; :func:`paragraphs` makes the decorator that puts it there.
Plain text replacement: other braces in a docstring are left alone. Apply the decorator
under ``@operation``, whose wrapper copies the finished docstring.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Mapping
from typing import TypeVar

__all__ = ["paragraphs"]

F = TypeVar("F", bound=Callable[..., object])


def paragraphs(table: Mapping[str, str]) -> Callable[[F], F]:
    """A decorator that fills a docstring's placeholder lines from ``table``.

    Parameters
    ----------
    table : mapping of str to str
        Paragraph text by placeholder name, unindented (numpydoc: an entry's first line,
        its description indented by four spaces).

    Returns
    -------
    callable
        The decorator; it raises ``KeyError`` for a placeholder ``table`` lacks, so a typo
        cannot ship verbatim.

    Examples
    --------
    >>> shared = paragraphs({"n": "n : int\\n    How many."})
    >>> @shared
    ... def f(n):
    ...     '''Parameters
    ...     ----------
    ...     {n}
    ...     '''
    >>> print(f.__doc__.strip())
    Parameters
        ----------
        n : int
            How many.
    """

    def fill(match: re.Match[str]) -> str:
        return textwrap.indent(table[match.group(2)], match.group(1))

    def decorate(fn: F) -> F:
        fn.__doc__ = re.sub(r"^( *)\{(\w+)\}$", fill, fn.__doc__ or "", flags=re.M)
        return fn

    return decorate
