"""The build options' keywords in the CMake package, written from their declarations.

CMake cannot import Python, so ``tvmffi_gen-config.cmake`` holds the keyword lists
``tvmffi_gen_add_package`` parses between two marker lines; ``python -m
tvmffi_gen.integration.cmake`` rewrites them from ``integration.options.cmake_keywords``, and a
test fails when the file and the declarations disagree.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..cli.main import cmake_dir
from .options import cmake_keywords

__all__ = ["BEGIN", "END", "config_file", "with_keywords"]

BEGIN = "# BEGIN build options\n"
END = "# END build options\n"


def config_file() -> Path:
    """``tvmffi_gen-config.cmake``."""
    return cmake_dir() / "tvmffi_gen-config.cmake"


def with_keywords(text: str) -> str:
    """``text`` (the config file's) with the lines between its markers written from the declarations."""
    head, found, rest = text.partition(BEGIN)
    _old, found_end, tail = rest.partition(END)
    if not found or not found_end:
        raise ValueError(f"{config_file()}: no lines {BEGIN.strip()!r} ... {END.strip()!r}")
    return head + BEGIN + cmake_keywords() + END + tail


def main() -> int:
    path = config_file()
    text = path.read_text(encoding="utf-8")
    new = with_keywords(text)
    if new != text:
        path.write_text(new, encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
