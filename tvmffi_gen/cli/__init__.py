"""The ``tvmffi-gen`` command: its options and the run that drives the stages."""
