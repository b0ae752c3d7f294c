"""Sphinx configuration of gpukit's documentation.

Builds offline (no intersphinx) from a source checkout: the repository root and
``backends/`` go on ``sys.path`` so ``gpukit`` and its built-in backends import
without installing anything; ``docs/_ext`` holds the directive that renders the
capability tables from ``gk.capabilities()`` at build time.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "backends"), str(ROOT / "docs" / "_ext")]
# The docs describe the CPU build; never let a GPU on the build machine change them.
os.environ.setdefault("GPUKIT_BACKEND", "numpy")

import gpukit  # noqa: E402

project = "gpukit"
author = "the gpukit developers"
copyright = "the gpukit developers"
release = gpukit.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "matplotlib.sphinxext.plot_directive",
    "gpukit_capabilities",
]

source_suffix = {".rst": "restructuredtext"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "benchmarks/**.md"]
default_role = "py:obj"

# -- autodoc / autosummary / numpydoc ----------------------------------------------------
autosummary_generate = True
autodoc_typehints = "none"  # numpydoc's Parameters/Returns carry the types, once
autodoc_member_order = "bysource"
numpydoc_show_class_members = False  # classes list their members explicitly in api/*.rst
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# -- matplotlib plots (benchmark figures) ------------------------------------------------
plot_include_source = False
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 110)]

# -- HTML ----------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"gpukit {release}"
html_static_path: list[str] = []
html_show_sourcelink = False
