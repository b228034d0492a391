"""The result of a check (`Problem`, `Report`) and its renderers (`text`)."""

from typing import Any

__all__ = ["Problem", "Report", "SGLANG_EXCEPTIONS", "SglangWouldRaise"]


def __getattr__(name: str) -> Any:
    # The model is imported when first asked for: the command line reads report/formats.py's
    # table of names at its start without it.
    if name in __all__:
        from inkling_compat.report import model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
