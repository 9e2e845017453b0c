"""Stage 5, verifying: the written package type-checked as its user's project will check it."""
