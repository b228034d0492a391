"""The result of a check (`Problem`, `Report`) and its renderers (`text`)."""

from inkling_compat.report.model import SGLANG_EXCEPTIONS, Problem, Report, SglangWouldRaise

__all__ = ["Problem", "Report", "SGLANG_EXCEPTIONS", "SglangWouldRaise"]
