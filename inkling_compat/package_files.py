"""Where the package's own files are: its folder and the folders shipped inside it (`rules/` and
`schemas/`, mapped into the package by pyproject's package-dir), found by the import system as
`importlib.resources.files` finds them, without importing `importlib.resources` (it and what it
imports, `tempfile` and `random` among them, cost about 5 ms of every start: docs/performance.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def package_folder(name: str = "inkling_compat") -> Path:
    """The folder of the package `name` (`inkling_compat`, `inkling_compat.rules`, ...)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"no package {name}", name=name)
    return Path(next(iter(spec.submodule_search_locations)))
