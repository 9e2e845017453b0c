"""tvmffi-gen: generate typed Python packages for libraries built on TVM FFI.

Pipeline: ``snapshot`` (read the registry, in a child process, into plain data) → ``model``
(decide names, types, imports) → ``render`` (jinja2 templates lay out text) → ``writer``
(atomic, byte-stable output) → ``verify`` (mypy --strict on what we wrote).
"""

__version__ = "0.1.0"
