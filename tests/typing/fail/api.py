"""Calls a checker must refuse: each marked line (``# E: <mypy's error code>``) is an error
to mypy, with that code, and to pyright; an unmarked line is an error to neither."""

import numpy as np

import gpukit as gk

a = np.eye(4)
b = np.ones(4)
model = gk.nn.Sequential(gk.nn.Linear(3, 2))
sgd = gk.optim.SGD(model.parameters(), lr=0.1)
x, info = gk.linalg.cg(a, b)

gk.linalg.cg(a, b, rtol="tight")  # E: call-overload
gk.linalg.cg(a, b, tol=1e-5)  # E: call-overload
gk.linalg.gmres(a, b, restart="5")  # E: call-overload
gk.linalg.solve(a, b, lower="yes")  # E: call-overload
gk.linalg.conjugate_gradient(a, b)  # E: attr-defined
info.reason.startswith(0)  # E: arg-type
info.converged = True  # E: misc
gk.matmul(a, a, None)  # E: call-overload
gk.matmul(a, a, precision="fast")  # E: call-overload
gk.fft.fft(b, norm="unitary")  # E: call-overload
gk.fft.rfft(b, n="8")  # E: call-overload
gk.nn.Linear(3, "2")  # E: arg-type
gk.nn.fit(model, gk.nn.MSELoss(), sgd, a, b, epochs=2)  # E: call-arg
gk.shard(a, axis="rows")  # E: arg-type
gk.no_such_function(a)  # E: attr-defined
