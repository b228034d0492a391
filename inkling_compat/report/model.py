"""The result of a check: every problem found, in the order sglang would hit them."""

from __future__ import annotations

import builtins
from dataclasses import asdict, dataclass, field
from typing import Any

SGLANG_EXCEPTIONS = {
    "ValueError": ValueError,
    "RuntimeError": RuntimeError,
    "AssertionError": AssertionError,
    "NotImplementedError": NotImplementedError,
    "IndexError": IndexError,
    "KeyError": KeyError,
    "TypeError": TypeError,
    "ImportError": ImportError,
    "FileNotFoundError": FileNotFoundError,
}


@dataclass(frozen=True)
class Problem:
    rule_id: str
    severity: str
    origin: str
    error_class: str
    message: str  # the full text sglang raises for these inputs (joined where sglang joins)
    fragment: str  # this rule's own part of `message`
    stage: str
    field_paths: tuple[str, ...]
    fixes: tuple[str, ...]
    adapter: str | None = None
    # Position of the adapter in the check's adapter list (names may repeat in a fleet).
    adapter_index: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["field_paths"] = list(self.field_paths)
        data["fixes"] = list(self.fixes)
        return data


@dataclass
class Report:
    problems: list[Problem] = field(default_factory=list)
    given_facts: dict[str, Any] = field(default_factory=dict)
    # Inputs not given ("config", "model", "platform"): the checks that depend on them ran on
    # placeholder defaults (facts.inputs_given), so they say nothing about the real input.
    not_given: list[str] = field(default_factory=list)
    sglang_version: str = "0.5.23"
    rules_evaluated: int = 0
    # Every adapter checked, in input order: {"name", "path", "form"} (form "unreadable" for an
    # adapter directory that could not be read).
    adapters: list[dict[str, Any]] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity != "warning"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    @property
    def ok(self) -> bool:
        """True when nothing would fail: warnings alone do not stop a deployment."""
        return not self.errors

    @property
    def first(self) -> Problem | None:
        """What sglang would raise first."""
        return self.errors[0] if self.errors else None

    def raise_for_problems(self) -> None:
        """Raise what sglang would raise first, with the same class and text."""
        first = self.first
        if first is None:
            return
        exc_type = SGLANG_EXCEPTIONS.get(first.error_class) or getattr(builtins, first.error_class, RuntimeError)
        if not (isinstance(exc_type, type) and issubclass(exc_type, BaseException)):
            exc_type = RuntimeError
        raise exc_type(first.message)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "sglang_version": self.sglang_version,
            "rules_evaluated": self.rules_evaluated,
            "given_facts": self.given_facts,
            "not_given": list(self.not_given),
            "problems": [p.to_dict() for p in self.problems],
            "adapters": self.by_adapter(),
        }

    def by_adapter(self) -> list[dict[str, Any]]:
        """Per adapter, in input order: name, path, form, ok, counts and its own problems
        (rule id, severity, message); problems not tied to an adapter are left out."""
        own: dict[int, list[Problem]] = {}
        for p in self.problems:
            if p.adapter_index is not None:
                own.setdefault(p.adapter_index, []).append(p)
        out = []
        for index, adapter in enumerate(self.adapters):
            problems = own.get(index, [])
            errors = sum(1 for p in problems if p.severity != "warning")
            out.append(
                dict(
                    adapter,
                    ok=errors == 0,
                    errors=errors,
                    warnings=len(problems) - errors,
                    problems=[{"rule_id": p.rule_id, "severity": p.severity, "message": p.message} for p in problems],
                )
            )
        return out

    def __str__(self) -> str:
        from inkling_compat.report.text import render_text

        return render_text(self, color=False)
