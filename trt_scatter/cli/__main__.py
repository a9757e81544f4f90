"""``python -m trt_scatter.cli`` = ``trt-scatter``."""

import sys

from trt_scatter.cli import main

sys.exit(main())
