"""The result of a check (`Problem`, `Report`) and its renderers (`text`)."""

from inkling_compat.report import model, text
from inkling_compat.report.model import SGLANG_EXCEPTIONS, Problem, Report, SglangWouldRaise

# `str(report)` is the terminal text: the renderer reads the model, so it is handed in here
model.text_renderer = lambda report: text.render_text(report, color=False)

__all__ = ["Problem", "Report", "SGLANG_EXCEPTIONS", "SglangWouldRaise"]
