"""Stage 4, writing: rendered files planned and written atomically, user code kept across
regeneration (``merge.py``), the manifest and the API change summary, ``--project``'s
``pyproject.toml``."""
