"""inkling-compat: pre-flight checks for serving sglang's Inkling models with LoRA adapters.

`check(config, adapter=None, *, model=None, platform=None) -> Report` evaluates every
declarative rule in `rules/` and reports all problems in sglang's order and wording.
Importing this package pulls in neither torch nor triton.
"""

from __future__ import annotations

from importlib import import_module
from os.path import dirname

from inkling_compat.inputs.versions import PACKAGE_VERSION as __version__
from inkling_compat.inputs.package_files import install as _install_checkout_folders

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

_install_checkout_folders(dirname(__file__))

__all__ = ["check", "Report", "Problem", "InputError", "RuleEvaluationError"]

# The public names are imported on first use (PEP 562): `import inkling_compat.cli` for
# `inkling-compat --help` then costs no engine, pydantic or rule loading.
_LAZY = {
    "check": "inkling_compat.api",
    "Report": "inkling_compat.report.model",
    "Problem": "inkling_compat.report.model",
    "InputError": "inkling_compat.errors",
    "RuleEvaluationError": "inkling_compat.errors",
}

if TYPE_CHECKING:
    from inkling_compat.api import check
    from inkling_compat.errors import InputError, RuleEvaluationError
    from inkling_compat.report.model import Problem, Report


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'inkling_compat' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
