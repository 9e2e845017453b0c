"""The runtime's platform seam (``tvmffi_runtime._platform``), loaded without the runtime.

Importing ``tvmffi_runtime`` loads ``libtvm_ffi`` into the process, which the generator leaves to
its child process (``snapshot``). ``_platform`` imports nothing of the runtime, so it is loaded
here from the installed runtime's folder as a module of its own: library names, search and
platform checks then follow one rule in the generator and in generated packages.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["platform_module"]

_NAME = "_tvmffi_gen_runtime_platform"


def platform_module() -> ModuleType:
    """``tvmffi_runtime/_platform.py`` of the installed runtime, loaded once."""
    loaded = sys.modules.get(_NAME)
    if loaded is not None:
        return loaded
    spec = importlib.util.find_spec("tvmffi_runtime")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("tvmffi_runtime is not installed: pip install tvmffi-runtime")
    source = Path(next(iter(spec.submodule_search_locations))) / "_platform.py"
    module_spec = importlib.util.spec_from_file_location(_NAME, source)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[_NAME] = module  # dataclasses look the module up while the class is created
    module_spec.loader.exec_module(module)
    return module
