"""The public API as users see it: ``dir()`` shows it and nothing else, and the API
reference documents exactly ``__all__`` of every public module."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import gpukit

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = [
    "gpukit",
    "gpukit.backend",
    "gpukit.cli",
    "gpukit.errors",
    "gpukit.testing",
    *sorted(f"gpukit.{name}" for name in gpukit._LAZY_SUBMODULES),
]
# Documented through a directive of another kind, or deliberately not auto-documented.
_NOT_AUTODOC = {"gpukit.__version__", "gpukit.errors"}


def _documented() -> set[str]:
    """Every ``gpukit...`` object an API page documents with an auto/py directive."""
    names = set()
    for page in (ROOT / "docs" / "api").glob("*.rst"):
        text = page.read_text()
        names.update(re.findall(r"^\.\. (?:auto|py:)\w+:: (gpukit[\w.]*)", text, re.M))
    return names


@pytest.mark.parametrize("name", PUBLIC)
def test_dir_shows_the_public_api_only(name):
    module = importlib.import_module(name)
    extra = {n for n in dir(module) if not (n.startswith("__") and n.endswith("__"))}
    extra -= set(module.__all__)
    if module is gpukit:  # public submodules are part of what users discover
        extra -= {*gpukit._LAZY_SUBMODULES, "backend"}
    assert not extra, f"dir({name}) shows names outside __all__: {sorted(extra)}"
    assert all(hasattr(module, n) for n in module.__all__), f"{name}.__all__ names a missing object"


def _key(qualname: str) -> object:
    """What identifies a documented object: itself, or for ``gpukit.xp`` (resolved on
    every access) the name."""
    if qualname == "gpukit.xp":
        return qualname
    module, _, attr = qualname.rpartition(".")
    return id(getattr(importlib.import_module(module), attr))


@pytest.mark.parametrize("name", PUBLIC)
def test_api_reference_documents_all_of_all(name):
    """Each public object is documented once, under any of its public names
    (``gpukit.GpukitError`` documents ``gpukit.errors.GpukitError`` too)."""
    module = importlib.import_module(name)
    documented = {_key(q) for q in _documented()}
    missing = [
        f"{name}.{n}"
        for n in module.__all__
        if f"{name}.{n}" not in _NOT_AUTODOC and _key(f"{name}.{n}") not in documented
    ]
    assert not missing, f"docs/api does not document {missing}"


def test_api_reference_documents_nothing_outside_all():
    public = {name: set(importlib.import_module(name).__all__) for name in PUBLIC}
    stray = []
    for qualname in _documented():
        module, _, attr = qualname.rpartition(".")
        if module in public and attr not in public[module] and qualname not in public:
            stray.append(qualname)
    assert not stray, f"docs/api documents names outside their module's __all__: {stray}"


def test_product_code_never_mentions_the_cupy_simulator():
    """The simulator lives in tests/ only: gpukit and its backends run unchanged on it, so
    no line of them may name it or branch on it (issue 14)."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    hits = [
        f"{path.relative_to(root)}:{n}"
        for folder in ("gpukit", "backends")
        for path in sorted((root / folder).rglob("*"))
        if path.suffix in {".py", ".cu", ".cuh", ".toml", ".cfg"}
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if "cupysim" in line.lower() or "simulat" in line.lower()
    ]
    assert not hits, hits
