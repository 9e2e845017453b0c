"""``python -m tvmffi_gen``."""

import sys

from tvmffi_gen.cli import main

sys.exit(main())
