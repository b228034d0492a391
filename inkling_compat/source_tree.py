"""The package imported straight from its source checkout (`python -m inkling_compat` in the
repository root puts the checkout first on `sys.path`, ahead of any installed copy).

`kernels/`, `rules/` and `schemas/` live beside `inkling_compat/` there and install as
`inkling_compat.kernels`, `.rules` and `.schemas` (pyproject's package-dir); an editable
install maps them with its own finder, a plain `sys.path` entry does not. `install()` adds a
finder for exactly those three names, pointing at the checkout's folders, so the checkout is
complete by itself: the command runs the code it was run beside, installed or not.
Only `os` and `sys` at import: every command imports this module.
"""

from __future__ import annotations

import os
import sys
from typing import Any

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
        from importlib.util import spec_from_file_location

        folder = os.path.join(self.root, name)
        return spec_from_file_location(fullname, os.path.join(folder, "__init__.py"), submodule_search_locations=[folder])

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
