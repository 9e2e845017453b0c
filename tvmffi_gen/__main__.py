"""``python -m tvmffi_gen``."""

from tvmffi_gen.cli.main import run

run()
