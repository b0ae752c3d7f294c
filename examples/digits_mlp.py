"""Train a small MLP on scikit-learn's bundled digits (8x8 images, no download).

    python examples/digits_mlp.py     # on the active backend (GPUKIT_BACKEND)
    PYTHONPATH=. python examples/digits_mlp.py     # from a source checkout

Prints one line per epoch and the final test accuracy.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import gpukit as gk


def main() -> float:
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)  # pixels 0..16 -> 0..1
    x_train, x_test, y_train, y_test = train_test_split(
        x, digits.target, test_size=0.25, random_state=0, stratify=digits.target
    )
    mean = x_train.mean(axis=0)
    x_train, x_test = x_train - mean, x_test - mean

    gk.nn.manual_seed(0)
    model = gk.nn.Sequential(
        gk.nn.Linear(64, 128),
        gk.nn.ReLU(),
        gk.nn.Linear(128, 10),
    )
    loss_fn = gk.nn.CrossEntropyLoss()
    optimizer = gk.optim.Adam(model.parameters(), lr=3e-3)
    scheduler = gk.optim.CosineAnnealingLR(optimizer, T_max=30)

    start = time.perf_counter()
    print(f"{'epoch':>5} {'loss':>8} {'test loss':>10} {'test acc':>9}")
    for epoch in range(30):
        h = gk.nn.fit(
            model, loss_fn, optimizer, x_train, y_train, epochs=1, batch_size=32,
            seed=epoch, validation=(x_test, y_test), progress=False,
        )  # fmt: skip
        scheduler.step()
        print(f"{epoch + 1:>5} {h['loss'][0]:>8.4f} {h['val_loss'][0]:>10.4f} "
              f"{h['val_accuracy'][0]:>9.2%}")  # fmt: skip
    predicted = gk.to_numpy(gk.nn.predict(model, x_test).argmax(axis=1))  # host, like y_test
    accuracy = float((predicted == y_test).mean())
    print(f"test accuracy {accuracy:.2%} in {time.perf_counter() - start:.1f} s "
          f"on {gk.get_backend().name}")  # fmt: skip
    return accuracy


if __name__ == "__main__":
    main()
