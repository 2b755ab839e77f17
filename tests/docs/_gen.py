"""tools/gen_reference.py loaded as a module (tools/ is not a package; the generator is a developer tool)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def generator() -> ModuleType:
    """The generator module, loaded once per process (it imports the parsers and exporter.names)."""
    name = "specgate_gen_reference"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
