"""``python -m labtest.matrix``: the detection matrix's command line (``labtest.matrix.cli``)."""

import sys

from labtest.matrix.cli import main

sys.exit(main())
