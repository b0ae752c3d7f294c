"""gpukit's airspeed-velocity suite (see docs/benchmarks.rst).

asv imports this folder as the package ``asv_bench`` without putting the checkout on
``sys.path``. gpukit runs from source (nothing is installed), and with
``environment_type: existing`` asv always measures the code next to the suite, so the
checkout goes first on the path.
"""

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
