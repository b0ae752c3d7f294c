"""``cupy.cuda.nccl`` (cupy/cuda/nccl.py): NCCL when ``CUPYSIM_NCCL=1``, else ``available``
False with CuPy's warning, as on a machine without libnccl."""

from __future__ import annotations

import warnings as _warnings

from cupysim.config import config as _config

available = True

if _config.nccl:
    from cupysim.nccl import *  # noqa: F403
    from cupysim.nccl import (  # noqa: F401
        NcclCommunicator,
        NcclConfig,
        NcclError,
        get_build_version,
        get_unique_id,
        get_version,
        groupEnd,
        groupStart,
    )
else:
    available = False
    # cupy/_environment.py _preload_warning, as the installed CuPy prints it here
    _warnings.warn(
        "\nnccl library could not be loaded.\n\n"
        "Reason: ImportError (libnccl.so.2: cannot open shared object file: No such file or "
        "directory)\n\nYou can install the library by:\n"
        '  $ pip install "nvidia-nccl-cu13>=2.27.7,<3"\n',
        stacklevel=2,
    )
