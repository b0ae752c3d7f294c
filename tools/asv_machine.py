"""Register this machine with asv, GPU model and driver/CUDA/CuPy versions included.

asv keeps one entry per machine in ``~/.asv-machine.json`` and copies it into every
result's ``params``; ``asv publish`` turns each distinct param into a selector, so the
extra keys written here (``gpu``, ``gpu_driver``, ``cuda``, ``cupy``) make the history
read per device. Prints the machine name for ``asv run --machine``.

The name defaults to ``gpu-<model>`` on a GPU machine and ``cpu-<cores>c-<cpu>`` otherwise
(container hostnames are not stable); ``ASV_MACHINE`` overrides it.
"""

from __future__ import annotations

import os
import re
import sys

from asv.machine import Machine, MachineCollection

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# the checkout first, not an installed gpukit
from gpukit._info import collect


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def describe() -> dict[str, str]:
    """asv's defaults for this machine plus the GPU and its software stack."""
    info = collect()
    entry = {k: str(v) for k, v in Machine.get_defaults().items()}
    gpus = [d for d in info["devices"] if not d["device"].startswith("numpy")]
    versions = info["versions"]
    entry["gpu"] = f"{len(gpus)}x {gpus[0]['name']}" if gpus else "none"
    # a CPU machine's history is one series, whatever CUDA runtime CuPy ships
    entry["gpu_driver"] = versions.get("cuda_driver", "none") if gpus else "none"
    entry["cuda"] = versions.get("cuda_runtime", "none") if gpus else "none"
    entry["cupy"] = versions.get("cupy", "none")
    if os.environ.get("ASV_MACHINE"):
        entry["machine"] = os.environ["ASV_MACHINE"]
    elif gpus:
        entry["machine"] = "gpu-" + _slug(gpus[0]["name"])
    else:
        entry["machine"] = f"cpu-{entry['num_cpu']}c-{_slug(entry['cpu'])}"
    return entry


def main() -> int:
    entry = describe()
    MachineCollection.save(entry["machine"], entry)
    print(entry["machine"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
