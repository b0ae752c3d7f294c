"""Devices, memory and transfers: where arrays live and what moving or allocating costs.

Owns device listing and selection (:mod:`~gpukit._runtime.devices`), the placement rule
and array ownership (:mod:`~gpukit._runtime.placement`), the out-of-memory policy every
operation runs under (:mod:`~gpukit._runtime.memory`), memory figures and limits
(``memstats``, ``memlimit``), pinned staging (``pinned``), transfer accounting and the
transfer guard (``transfer``), and the one-thread-per-device workers (``workers``).

May use: :mod:`gpukit._select`, the backend contract :mod:`gpukit.backend` and
:mod:`gpukit.errors`.
"""
