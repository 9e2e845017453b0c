"""``python -m tvmffi_gen``."""

from tvmffi_gen.cli import run

run()
