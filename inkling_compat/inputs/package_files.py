"""Where the package's own files are: its folder and the folders shipped inside it (`rules/` and
`schemas/`, mapped into the package by pyproject's package-dir), found by the import system as
`importlib.resources.files` finds them, without importing `importlib.resources` (it and what it
imports, `tempfile` and `random` among them, cost about 5 ms of every start: docs/performance.md).

Run from its source checkout (`python -m inkling_compat` in the repository root puts the checkout
first on `sys.path`, ahead of any installed copy), the package finds `kernels/`, `rules/` and
`schemas/` beside `inkling_compat/`, where they install as `inkling_compat.kernels`, `.rules` and
`.schemas`: an editable install maps them with its own finder, a plain `sys.path` entry does
not, so `install()` adds a finder for exactly those three names (the checkout is complete by
itself: the command runs the code it was run beside, installed or not).
Only `os`, `sys` and `importlib` at import: every command imports this module (and no
`importlib.util`: its import costs about 0.6 ms of a check).
"""

from __future__ import annotations

import os
import sys
from importlib import import_module

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any
    from pathlib import Path


def package_folder(name: str = "inkling_compat") -> Path:
    """The folder of the package `name` (`inkling_compat`, `inkling_compat.rules`, ...)."""
    from pathlib import Path

    return Path(package_dir(name))


def package_dir(name: str = "inkling_compat") -> str:
    """`package_folder(name)` as a string (a check's own data files are opened without pathlib)."""
    # The package imported, as `importlib.resources.files` imports it (`rules/` and `schemas/`
    # hold a docstring only); a missing one is import_module's ModuleNotFoundError.
    module = sys.modules.get(name) or import_module(name)
    spec = module.__spec__
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"no package {name}", name=name)
    return str(next(iter(spec.submodule_search_locations)))


# Installed subpackage -> the checkout's folder of the same name (pyproject's package-dir).
MAPPED = ("kernels", "rules", "schemas")


class CheckoutFolders:
    """A meta path finder: `inkling_compat.<name>` -> `<checkout>/<name>/__init__.py`; their
    submodules are then found by the ordinary path finder through the package's `__path__`."""

    def __init__(self, root: str) -> None:
        self.root = root

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        package, _, name = fullname.partition(".")
        if package != "inkling_compat" or name not in MAPPED:
            return None
        from importlib.machinery import PathFinder

        return PathFinder.find_spec(fullname, [self.root])  # (the package `<checkout>/<name>/`)

    def invalidate_caches(self) -> None:
        pass


def install(package_dir: str) -> None:
    """Add the finder when `package_dir` (the imported `inkling_compat/`) is a checkout's: it
    holds none of the three and its parent holds all three beside a pyproject.toml. An
    installed package (the three inside it) is left alone."""
    if os.path.isdir(os.path.join(package_dir, "rules")):
        return
    root = os.path.dirname(package_dir)
    if not os.path.isfile(os.path.join(root, "pyproject.toml")):
        return
    if not all(os.path.isfile(os.path.join(root, name, "__init__.py")) for name in MAPPED):
        return
    if not any(isinstance(f, CheckoutFolders) for f in sys.meta_path):
        sys.meta_path.append(CheckoutFolders(root))
