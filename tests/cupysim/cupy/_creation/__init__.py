"""cupy._creation: where CuPy defines its array-creation functions."""
