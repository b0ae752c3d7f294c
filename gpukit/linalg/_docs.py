"""Docstring paragraphs the dense routines share (:mod:`gpukit._docstrings`)."""

from __future__ import annotations

from .._docstrings import paragraphs

__all__ = ["shared"]

shared = paragraphs(
    {
        # Parameters
        "check_finite": """\
check_finite : bool, default True
    Refuse input holding NaN or inf with a ValueError naming it (as SciPy): LAPACK
    may hang or return garbage on it. False skips that pass over the input.""",
        # Raises
        "non_numeric": """\
TypeError
    An array argument has a non-numeric dtype (string, object, ...) or is long
    double; the message names the argument, the dtype and what is accepted.""",
        "not_square": """\
ValueError
    ``a`` is not a stack of square matrices, or (``check_finite``) holds NaN or inf.""",
    }
)
