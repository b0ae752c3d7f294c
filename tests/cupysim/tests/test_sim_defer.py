"""Deferred execution (CUPYSIM_DEFER=1, cupysim/defer.py), in fresh simulator processes."""

from __future__ import annotations

from simhelpers import run_sim

UNSYNCED = """
import cupy, numpy
s = cupy.cuda.Stream(non_blocking=True)
x = cupy.zeros(4)
cupy.cuda.Device().synchronize()
with s:
    x.fill(5)  # queued on s
print(float(x._npv.sum()))  # the memory: nothing needed s's work yet
s.synchronize()
print(float(x._npv.sum()))
"""


def test_work_waits_until_a_synchronisation_needs_it():
    r = run_sim(UNSYNCED, CUPYSIM_DEFER="1")
    assert r.stdout.split() == ["0.0", "20.0"], r.stderr
    r = run_sim(UNSYNCED)  # by default everything runs when enqueued
    assert r.stdout.split() == ["20.0", "20.0"], r.stderr


ORDERED = """
import cupy
a = cupy.cuda.Stream(non_blocking=True)
b = cupy.cuda.Stream(non_blocking=True)
x = cupy.arange(6.0)
cupy.cuda.Device().synchronize()
with a:
    y = x * 2
    z = y + 1
    e = a.record()
b.wait_event(e)
with b:
    w = z * 10  # reads z: a's queued work runs first, in a's order
    print(float(w.sum()))
with a:
    u = x + 100
with b:
    v = x - 100
cupy.cuda.Device().synchronize()  # both streams' queues, interleaved
print(float(u.sum()), float(v.sum()))
"""


def test_ordered_work_sees_the_values_a_gpu_gives_for_every_seed():
    for seed in ("0", "1", "7"):
        r = run_sim(ORDERED, CUPYSIM_DEFER="1", CUPYSIM_DEFER_SEED=seed)
        assert r.stdout.split() == ["360.0", "615.0", "-585.0"], r.stderr


def test_interleaving_follows_the_seed_and_each_streams_order():
    code = """
from cupysim import defer, streams
a, b = streams.create(0, True), streams.create(0, True)
seen = []
for i in range(6):
    for s, name in ((a, "a"), (b, "b")):
        streams.check(s, [], [], "op")
        defer.enqueue(s, s.count, lambda n=f"{name}{i}": seen.append(n))
streams.synchronize_device(0)
print(" ".join(seen))
"""
    orders = set()
    for seed in ("0", "1", "2", "3"):
        r = run_sim(code, CUPYSIM_DEFER="1", CUPYSIM_DEFER_SEED=seed)
        seen = r.stdout.split()
        assert sorted(seen) == sorted(f"{n}{i}" for n in "ab" for i in range(6)), r.stderr
        for name in "ab":
            assert [s for s in seen if s[0] == name] == [f"{name}{i}" for i in range(6)]
        orders.add(tuple(seen))
        again = run_sim(code, CUPYSIM_DEFER="1", CUPYSIM_DEFER_SEED=seed)
        assert again.stdout == r.stdout  # the same seed, the same interleaving
    assert len(orders) > 1
