"""The CEL evaluator (common-expression-language's Rust core), imported without its CLI.

`import cel` also imports the package's command-line front end (typer, rich), which would
more than double every start of `inkling-compat`. Only the compiled extension is needed.

The extension imports Python's `logging` when it loads (pyo3-log, which forwards the Rust side's
log records) but logs nothing while it compiles or runs the rules' programs. While it loads,
`logging` (if not imported yet) is a stand-in that imports the real module when the extension
first reads from it: a check does not import `logging` and what it imports (traceback,
threading, string: about 5 ms of every start), and the stand-in is in no one else's hands (it
leaves sys.modules once the extension is loaded).

The extension's first conversion of a value into a context (`update`, below) reads the datetime
C API (`datetime.datetime_CAPI`, through the import system), which imports `datetime`: its pure
Python body runs before it takes the C module's names (about 1 ms of every start). The C module
`_datetime` holds the same capsule (it is where `datetime` takes it from), so while that first
conversion runs `datetime` is `_datetime`, and it leaves sys.modules right after; the extension
keeps the API it read, the same types, so every value converts as it would.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import types
from typing import Any


class _LoggingOnFirstUse(types.ModuleType):
    """`logging` as the extension holds it: each attribute read from the real module, imported then."""

    def __getattr__(self, name: str) -> Any:
        if sys.modules.get("logging") is self:  # (read while the extension loads: the real one now)
            del sys.modules["logging"]
        import logging

        return getattr(logging, name)


def _load_core() -> Any:
    stand_in = None
    if "logging" not in sys.modules:
        stand_in = sys.modules["logging"] = _LoggingOnFirstUse("logging")
    try:
        return _load_extension()
    finally:
        if stand_in is not None and sys.modules.get("logging") is stand_in:
            del sys.modules["logging"]


def _load_extension() -> Any:
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
_api_read = False


def update(ctx: Any, variables: dict[str, Any]) -> None:
    """`ctx.update(variables)`; the first one with `datetime` not imported reads the datetime C
    API from `_datetime` (module docstring)."""
    global _api_read
    if _api_read or "datetime" in sys.modules:
        ctx.update(variables)
        return
    import _datetime

    sys.modules["datetime"] = _datetime  # type: ignore[assignment]
    try:
        ctx.update(variables)
    finally:
        if sys.modules.get("datetime") is _datetime:
            del sys.modules["datetime"]
    _api_read = True
