"""Errors of the tool itself: unusable input (exit 2), as opposed to problems it finds."""

from __future__ import annotations


class InputError(Exception):
    """Input the checker cannot use. Always names the file and the field."""

    def __init__(self, file: str, field: str, reason: str):
        self.file = file
        self.field = field
        self.reason = reason
        super().__init__(f"{file}: {field}: {reason}")


class RuleEvaluationError(Exception):
    """A rule's expression failed on well-formed input: a defect in that rule file."""

    def __init__(self, rule_id: str, detail: str):
        self.rule_id = rule_id
        super().__init__(f"rule {rule_id}: {detail}")


class RuleFileError(InputError):
    """A rule file in `rules/` is broken (a defect of the tool's data, exit 3 in the CLI)."""


class UsageError(Exception):
    """The `inkling-compat` command line itself is unusable (argparse's message): exit 2, one line."""
