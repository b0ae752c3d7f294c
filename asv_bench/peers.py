"""Same-run comparisons with peers: what every ``track_ratio`` benchmark shares.

A benchmark class deriving from :class:`Comparison` builds gpukit's call and its peer's
on the same data in ``setup`` and returns ``self.ratio(ours, peer, sync)`` from a
``track_ratio`` method (``unit = "ratio"``): gpukit's time over the peer's, the median of
interleaved pairs of blocks, each after an idle pause (``gpukit._bench.timing.compare``,
shared with ``gpukit bench``; DESIGN.md says why). asv records the ratio in the history
beside the ``time_`` figures of both sides; ``python -m tools.peers`` runs the same
classes without asv and prints both times, the ratio, its quartiles and the target.

Examples
--------
The shape of a comparison (``bench_matmul.MatmulRatio``)::

    class MatmulRatio(peers.Comparison):
        params = [["numpy", "cupy"], [8, 512]]
        param_names = ["backend", "n"]

        def setup(self, backend, n):
            self.backend = common.use(backend)
            a = common.random(self.backend, (n, n))
            self.ours = lambda: gk.matmul(a, a)
            self.peer = lambda: self.backend.xp.matmul(a, a)

        def track_ratio(self, backend, n):
            return self.ratio(self.ours, self.peer, self.backend.synchronize)

        track_ratio.unit = "ratio"

        def target(self, backend, n):
            return 1.3 if n == 8 else None
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpukit._bench.runners import Runner

try:
    from gpukit._bench.timing import Pair, compare
except ImportError:  # an older gpukit (a regression check's base): the ratios cannot run,
    Pair = compare = None  # the modules' timing benchmarks still do

from . import common


def _nothing() -> None:
    pass


class Comparison(common.Undoable):
    """Base of a benchmark class whose ``track_ratio*`` methods compare gpukit with a peer.

    Attributes
    ----------
    pairs : int
        Interleaved pairs of blocks per ratio.
    block : float
        Seconds a block lasts at least.
    idle : float
        Seconds of pause before each block (a thread pool spins ~0.1 s after a call).
    last : Pair or None
        The pair of the last :meth:`ratio` (both times and every per-pair ratio), which
        ``tools.peers`` prints.
    """

    pairs = 7
    block = 0.05
    idle = 0.15
    timeout = 300
    last: Pair | None = None

    def ratio(
        self,
        ours: Callable[[], object],
        peer: Callable[[], object],
        sync: Callable[[], None] = _nothing,
    ) -> float:
        """gpukit's seconds per call over the peer's: the median of interleaved pairs."""
        if compare is None:
            raise NotImplementedError("this gpukit has no interleaved pair timing")
        self.last = compare(
            ours, peer, pairs=self.pairs, block=self.block, idle=self.idle, sync=sync
        )
        return self.last.ratio

    def target(self, *params: Any) -> float | None:
        """The largest ratio the comparison's goal accepts at ``params``; None: information."""
        return None

    def overhead_target(self, *params: Any) -> float | None:
        """The most seconds per call gpukit's side may take over the peer's at ``params``
        (``tools.peers``' ``over``, from the pairs: where the peer is the library call
        gpukit makes, gpukit's own cost); None: no such goal."""
        return None

    def teardown(self, *params: Any) -> None:
        self.clean_up()

    def torch_threads_as_blas(self, torch: Any) -> None:
        """Run PyTorch with as many threads as NumPy's BLAS, until teardown: both sides
        then use the same cores (``--threads N`` of ``tools.peers`` limits both)."""
        from threadpoolctl import threadpool_info

        blas = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
        self.cleanup.callback(torch.set_num_threads, torch.get_num_threads())
        torch.set_num_threads(max(blas, default=1))


def sides(peer: str) -> tuple[Runner, Runner]:
    """``(gpukit, peer)``: the ``IMPLS`` entry ``peer`` and gpukit on the same device.

    NotImplementedError (a skip) when either cannot run here; gpukit's backend becomes
    the active one.
    """
    other = common.impl(peer)
    ours = common.impl("gpukit-cupy" if other.device == "gpu" else "gpukit-numpy")
    return ours, other


def sync_both(a: Runner, b: Runner) -> Callable[[], None]:
    """Wait for both runners' queued device work (nothing on the host)."""
    if a.device != "gpu" and b.device != "gpu":
        return _nothing

    def sync() -> None:
        a.sync()
        b.sync()

    return sync
