"""Sharding: arrays split along one axis over several devices.

Owns :class:`~gpukit._sharding.array.ShardedArray`, ``gk.shard``, ``gk.map_shards`` and
the ``"sharded"`` array kind, through which every public operation given a sharded
argument reaches its sharded implementation (registered by :mod:`gpukit.sharding`) or a
clear error. The collectives the sharded operations use are part of the backend contract
(:mod:`gpukit.backend.collectives`).

May use: :mod:`gpukit._dispatch`, :mod:`gpukit._runtime`, :mod:`gpukit._select`, the
backend contract :mod:`gpukit.backend` and :mod:`gpukit.errors`.
"""
