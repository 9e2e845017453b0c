"""How many public functions of a stub package whose result was ``Incomplete`` have a type in
another generation of it: ``python benchmarks/count_returns.py OLD/tvm-stubs NEW/tvm-stubs``.

Public: no part of the module path or of the qualname starts with ``_``. Used for the figure of
inferred results in docs/stubs.md (the stubs before and after the rule, or without and with it).
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path


def results(path: Path) -> dict[str, str | None]:
    """Every function's and method's result annotation by qualname (None when it has none)."""
    out: dict[str, str | None] = {}
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return out

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                walk(node.body, prefix + node.name + ".")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out[prefix + node.name] = ast.unparse(node.returns) if node.returns else None

    walk(tree.body, "")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    args = parser.parse_args()
    before = typed = 0
    for path in sorted(args.old.rglob("*.pyi")):
        rel = path.relative_to(args.old)
        if any(part.startswith("_") and part != "__init__.pyi" for part in rel.parts):
            continue
        new = results(args.new / rel)
        for qual, ret in results(path).items():
            if ret != "Incomplete" or any(part.startswith("_") for part in qual.split(".")):
                continue
            before += 1
            typed += new.get(qual) not in (None, "Incomplete")
    print(f"{before} public functions returned Incomplete in {args.old}; {typed} of them have a type in {args.new}")


if __name__ == "__main__":
    main()
