"""``cupy.cuda.Graph`` (modelled on cupy/cuda/graph.pyx, CuPy 14.2): a graph made by
stream capture, launched or uploaded on a stream (cupysim/capture.py)."""

from __future__ import annotations

import os
import tempfile

from cupysim import streams as _sim

from . import runtime as _runtime


def _stream_ptr(stream) -> int:
    if stream is not None:
        return stream.ptr
    from cupysim import devices

    return _sim.current_handle(devices.current())


class Graph:
    """The CUDA graph object. Created by stream capture only
    (:meth:`cupy.cuda.Stream.end_capture`)."""

    def __init__(self, *args, **kwargs) -> None:
        raise NotImplementedError(
            "currently this class cannot be initiated by the user and must be created via "
            "stream capture"
        )

    @staticmethod
    def _from_stream(handle: int) -> Graph:
        g = Graph.__new__(Graph)
        g.graph = handle
        g.graphExec = _runtime.graphInstantiate(handle)
        return g

    def __del__(self, _destroy=_runtime.graphDestroy, _destroy_exec=_runtime.graphExecDestroy):
        if getattr(self, "graph", 0):
            _destroy(self.graph)
        if getattr(self, "graphExec", 0):
            _destroy_exec(self.graphExec)

    def launch(self, stream=None) -> None:
        """Launch the graph on ``stream`` (the current stream by default)."""
        _runtime.graphLaunch(self.graphExec, _stream_ptr(stream))

    def upload(self, stream=None) -> None:
        """Upload the graph to ``stream`` (the current stream by default)."""
        _runtime.graphUpload(self.graphExec, _stream_ptr(stream))

    def debug_dot_str(self, flags=0) -> str:
        """The graph in DOT (``cudaGraphDebugDotPrint``)."""
        f = tempfile.NamedTemporaryFile(delete=False)
        try:
            f.close()
            _runtime.graphDebugDotPrint(self.graph, f.name, flags)
            with open(f.name) as f2:
                return f2.read()
        finally:
            os.remove(f.name)


Graph.__module__ = "cupy.cuda.graph"
