"""``python -m gpukit info``."""

import sys

from .cli import main

sys.exit(main())
