"""What a checker infers for gk.nn: layers, Sequential and fit."""

import numpy as np
from typing_extensions import assert_type

import gpukit as gk

x = np.ones((8, 3), dtype=np.float32)
y = np.zeros((8, 1), dtype=np.float32)

layer = gk.nn.Linear(3, 4, seed=0)
assert_type(layer, gk.nn.Linear)
assert_type(layer.in_features, int)

model = gk.nn.Sequential(layer, gk.nn.ReLU(), gk.nn.Linear(4, 1, bias=False))
assert_type(model, gk.nn.Sequential)
assert_type(model[0], gk.nn.Module)

optimizer = gk.optim.SGD(model.parameters(), lr=0.1)
history = gk.nn.fit(model, gk.nn.MSELoss(), optimizer, x, y, epochs=2, batch_size=4, seed=0)
assert_type(history, dict[str, list[float]])
