"""Peers' own test suites run against gpukit (see upstream.py).

A package, so that its conftest imports as ``conformance.conftest`` rather than a second
top-level ``conftest`` beside ``tests/conftest.py`` (``--doctest-modules`` would collide).
"""
