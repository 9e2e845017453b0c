"""The runtime's standalone modules, loaded without the runtime: its platform seam
(``tvmffi_runtime._platform``), its table of field layouts and flags
(``tvmffi_runtime._field_kinds``) and the API level of generated code
(``tvmffi_runtime._api_level``).

Importing ``tvmffi_runtime`` loads ``libtvm_ffi`` into the process, which the generator leaves to
its child process (``snapshot``). These modules import nothing of the runtime, so each is
loaded here from the installed runtime's folder as a module of its own: library names, search
and platform checks, how a field is laid out and the form of generated code then follow one
rule in the generator and in generated packages.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["api_level", "field_kinds", "fields_class", "platform_module"]


def _runtime_module(stem: str) -> ModuleType:
    """``tvmffi_runtime/{stem}.py`` of the installed runtime, loaded once, on its own."""
    name = f"_tvmffi_gen_runtime{stem}"
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    spec = importlib.util.find_spec("tvmffi_runtime")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("tvmffi_runtime is not installed: pip install tvmffi-runtime")
    source = Path(next(iter(spec.submodule_search_locations))) / f"{stem}.py"
    module_spec = importlib.util.spec_from_file_location(name, source)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # dataclasses look the module up while the class is created
    module_spec.loader.exec_module(module)
    return module


def platform_module() -> ModuleType:
    """``tvmffi_runtime/_platform.py``: library names, search order, platform checks."""
    return _runtime_module("_platform")


def field_kinds() -> ModuleType:
    """``tvmffi_runtime/_field_kinds.py``: the one table of field layouts."""
    return _runtime_module("_field_kinds")


def api_level() -> int:
    """``tvmffi_runtime._api_level.API_LEVEL``: the form of generated code the runtime supports,
    which a generated package requires."""
    level: int = _runtime_module("_api_level").API_LEVEL
    return level


def fields_class() -> str:
    """``tvmffi_runtime._api_level.FIELDS_CLASS``: the name of the class nested in a generated
    class that holds its field declarations (``register`` moves them onto the class)."""
    name: str = _runtime_module("_api_level").FIELDS_CLASS
    return name
