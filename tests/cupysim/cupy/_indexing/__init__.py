"""cupy._indexing: where CuPy defines its indexing helpers."""
