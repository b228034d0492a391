"""inkling-compat: pre-flight checks for serving sglang's Inkling models with LoRA adapters.

`check(config, adapter=None, *, model=None, platform=None) -> Report` evaluates every
declarative rule in `rules/` and reports all problems in sglang's order and wording.
Importing this package pulls in neither torch nor triton.
"""

from inkling_compat.api import check
from inkling_compat.errors import InputError, RuleEvaluationError
from inkling_compat.report.model import Problem, Report

__all__ = ["check", "Report", "Problem", "InputError", "RuleEvaluationError"]
__version__ = "0.1.0"
