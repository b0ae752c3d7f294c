"""Split work over every device, checked against one device.

A sharded matmul, a sharded batched FFT, a distributed 2-D FFT and a reshard,
conjugate gradients on a row-sharded sparse operator, and a DataParallel training run.

Runs on all GPUs present, or on virtual CPU devices::

    GPUKIT_BACKEND=numpy GPUKIT_CPU_DEVICES=4 python examples/multi_device.py
"""

from __future__ import annotations

import numpy as np

import gpukit as gk


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"backend {gk.get_backend().name}, devices: {[str(d) for d in gk.devices()]}")

    a = rng.standard_normal((1000, 512)).astype(np.float32)
    b = rng.standard_normal((512, 256)).astype(np.float32)
    sa = gk.shard(a, axis=0)
    print(f"rows per device: {dict(zip(sa.devices, sa.sizes, strict=True))}")

    c = gk.sharding.matmul(sa, b)
    ref = a.astype(np.float64) @ b
    err = np.linalg.norm(gk.to_numpy(c) - ref) / np.linalg.norm(ref)
    print(f"sharded matmul {a.shape} @ {b.shape}: rel. error vs float64 one-device {err:.1e}")

    signals = gk.shard(rng.standard_normal((64, 4096)).astype(np.float32), axis=0)
    spectra = gk.sharding.rfft(signals, axis=1)
    ref = np.fft.rfft(gk.to_numpy(signals).astype(np.float64), axis=1)
    err = np.linalg.norm(gk.to_numpy(spectra) - ref) / np.linalg.norm(ref)
    print(f"sharded batched rfft {signals.shape} -> {spectra.dtype}: rel. error {err:.1e}")

    # the distributed 2-D FFT: rows transformed where they are, one all-to-all, columns
    field = rng.standard_normal((512, 384)) + 1j * rng.standard_normal((512, 384))
    sf = gk.shard(field, axis=0)
    gk.reset_transfer_stats()
    spectrum = gk.fft.fft2(sf)  # split like the input again: two exchanges
    moved = gk.transfer_stats().device_to_device.bytes
    ref = np.fft.fft2(field)
    err = np.linalg.norm(gk.to_numpy(spectrum) - ref) / np.linalg.norm(ref)
    print(f"distributed fft2 {field.shape} split along axis {spectrum.axis}: rel. error "
          f"{err:.1e}, {moved / 2**20:.1f} MiB exchanged between devices")  # fmt: skip
    cols = gk.reshard(sf, axis=1)
    print(f"resharded to columns, per device: {dict(zip(cols.devices, cols.sizes, strict=True))}")

    total = gk.sharding.norm(sa)
    print(f"norm of a: sharded {float(total):.6f}, one device {np.linalg.norm(a):.6f}")

    # conjugate gradients: the Poisson matrix split by rows to match the sharded b
    lap = gk.sparse.poisson2d(48)
    rhs = rng.standard_normal(lap.shape[0])
    x, info = gk.linalg.cg(lap, gk.shard(rhs), rtol=1e-10)
    x1, info1 = gk.linalg.cg(lap, rhs, rtol=1e-10)
    err = np.linalg.norm(gk.to_numpy(x) - x1) / np.linalg.norm(x1)
    rows = dict(zip(x.devices, x.sizes, strict=True))
    print(f"sharded cg, n={lap.shape[0]}, rows per device {rows}: {info.iterations} iterations "
          f"(one device: {info1.iterations}), rel. difference {err:.1e}")  # fmt: skip

    # data-parallel training: each batch split across the devices, gradients summed
    samples = rng.standard_normal((2000, 20)).astype(np.float32)
    labels = (samples[:, :10].sum(axis=1) > samples[:, 10:].sum(axis=1)).astype(np.int64)

    def mlp() -> gk.nn.Module:
        return gk.nn.Sequential(
            gk.nn.Linear(20, 64, seed=0), gk.nn.ReLU(), gk.nn.Linear(64, 2, seed=1)
        )

    def train(model: gk.nn.Module) -> dict:
        opt = gk.optim.Adam(model.parameters(), lr=1e-2)
        loss_fn = gk.nn.CrossEntropyLoss()
        return gk.nn.fit(model, loss_fn, opt, samples, labels, epochs=3, batch_size=250,
                         seed=0, validation=(samples, labels), progress=False)  # fmt: skip

    parallel, single = gk.nn.DataParallel(mlp()), mlp()
    hist, hist1 = train(parallel), train(single)
    share = np.array_split(np.arange(250), len(parallel.devices))
    print(f"DataParallel over {len(parallel.devices)} devices, batch of 250 split "
          f"{[len(s) for s in share]}: validation accuracy {hist['val_accuracy'][-1]:.3f} "
          f"(one device {hist1['val_accuracy'][-1]:.3f})")  # fmt: skip
    worst = max(
        np.abs(gk.to_numpy(p.data) - gk.to_numpy(q.data)).max() / np.abs(gk.to_numpy(q.data)).max()
        for p, q in zip(parallel.parameters(), single.parameters(), strict=True)
    )
    print(f"parameters vs one-device training: max rel. difference {worst:.1e}")


if __name__ == "__main__":
    main()
