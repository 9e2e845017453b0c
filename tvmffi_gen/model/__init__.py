"""Stage 2, the model: every decision about a generated package (names, members, signatures,
annotations, imports), made from a snapshot by ``builder.py`` into ``package.PackageModel``."""
