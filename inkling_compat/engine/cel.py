"""The CEL evaluator (common-expression-language's Rust core), imported without its CLI.

`import cel` also imports the package's command-line front end (typer, rich), which would
more than double every start of `inkling-compat`. Only the compiled extension is needed.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from typing import Any


def _load_core() -> Any:
    spec = importlib.util.find_spec("cel")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("common-expression-language is not installed")
    if "cel.cel" in sys.modules:
        return sys.modules["cel.cel"]
    for folder in spec.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = f"{folder}/cel{suffix}"
            core_spec = importlib.util.spec_from_file_location("cel.cel", path)
            if core_spec is None:
                continue
            try:
                module = importlib.util.module_from_spec(core_spec)
                core_spec.loader.exec_module(module)  # type: ignore[union-attr]
            except (ImportError, OSError):
                continue
            sys.modules["cel.cel"] = module
            return module
    import cel  # fall back to the package (slower start, same API)

    return cel


_core = _load_core()
compile = _core.compile  # noqa: A001 - CEL's own name
Context = _core.Context
