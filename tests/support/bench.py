"""A script of benchmarks/ as a module, for the tests of its machinery."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load(script: str, name: str | None = None) -> ModuleType:
    """benchmarks/SCRIPT.py, imported once and registered as `name` (default SCRIPT) in
    sys.modules, so every test file and a pickling worker see the same module."""
    name = name or script
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{script}.py")
    assert spec is not None and spec.loader is not None, script
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
