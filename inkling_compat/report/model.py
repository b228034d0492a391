"""The result of a check: every problem found, in the order sglang would hit them.

Who says so (a rule's `origin`) decides how a problem is named: `sglang` and `argparse`
problems are what sglang raises; `derived` ones are what happens after sglang accepts the
input (a torch error later, a silent misbehaviour); `inkling-compat` ones are the checker's own
findings (an unknown key, an unreadable or unchecked file), which sglang never raises.
"""

from __future__ import annotations

import builtins

from inkling_compat.sglang.plain_dataclass import dataclass, field_names, replace

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Callable

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

# Origins whose problems are an exception raised by sglang's own code (or its argparse).
RAISED_BY_SGLANG = frozenset({"sglang", "argparse"})


def origin_label(origin: str) -> str:
    """How the text and JSON name a problem of this origin."""
    if origin in RAISED_BY_SGLANG:
        return "sglang would raise"
    if origin == "derived":
        return "sglang accepts this and then"
    return "inkling-compat"


class SglangWouldRaise(Exception):
    """What `Report.raise_for_problems()` raises: always an `Exception` (never SystemExit, even
    for argparse's choices), whose text is the problem's message.

    `sglang_class` names the class sglang (or torch, for a derived crash) would raise
    ("ValueError", "SystemExit" for argparse) or is None for inkling-compat's own findings,
    which sglang never raises; `problem` and `report` are the problem and the whole report.
    Where that class is an Exception, the raised object is also an instance of it (a subclass
    of both, with that class's name), so `except ValueError` still catches a ValueError.
    """

    sglang_class: str | None = None

    def __init__(self, message: str, problem: Problem | None = None, report: Report | None = None):
        super().__init__(message)
        self.problem = problem
        self.report = report
        if problem is not None:
            self.sglang_class = None if problem.origin == "inkling-compat" else problem.error_class

    def __str__(self) -> str:  # the message as is (KeyError would quote it)
        return str(self.args[0]) if self.args else ""

    def __reduce__(self) -> tuple[Any, ...]:
        # The per-class subclasses are made at run time: pickle (a process pool handing the
        # exception back) rebuilds them by the class name instead of by an import path.
        return (_rebuild, (self._raised_as, str(self), self.problem, self.report))

    _raised_as: str | None = None  # the sglang class this subclass also derives from


def _rebuild(raised_as: str | None, message: str, problem: Problem | None, report: Report | None) -> SglangWouldRaise:
    return _raise_class(raised_as)(message, problem=problem, report=report)


_RAISE_CLASSES: dict[type, type] = {}


def _raise_class(error_class: str | None) -> type[SglangWouldRaise]:
    """SglangWouldRaise, or a subclass of it and of sglang's Exception class of that name."""
    base = SGLANG_EXCEPTIONS.get(error_class or "") or getattr(builtins, error_class or "", None)
    if not (isinstance(base, type) and issubclass(base, Exception)):
        return SglangWouldRaise
    if base not in _RAISE_CLASSES:
        namespace = {"__module__": __name__, "__qualname__": f"SglangWouldRaise[{base.__name__}]", "_raised_as": base.__name__}
        _RAISE_CLASSES[base] = type(base.__name__, (SglangWouldRaise, base), namespace)
    return _RAISE_CLASSES[base]


@dataclass(frozen=True)
class Problem:
    """One problem a rule found: immutable; `replace(**changes)` makes a changed copy."""

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
    # Where the fields are in the user's files (inputs/source_map.Location), in field order.
    locations: tuple[Any, ...] = ()
    # A bare sglang `assert` says nothing: the condition that failed, with its values.
    because: str | None = None

    replace = replace  # (problem.replace(**changes), as dataclasses.replace(problem, **changes))

    @property
    def raised_by_sglang(self) -> bool:
        """True when sglang's own code (or its argparse) raises this; False for a derived
        prediction or an inkling-compat finding."""
        return self.origin in RAISED_BY_SGLANG

    @property
    def label(self) -> str:
        return origin_label(self.origin)

    @property
    def url(self) -> str:
        """The rule's page (docs/rules/<id>.md)."""
        from inkling_compat.report.urls import rule_url

        return rule_url(self.rule_id)

    def to_dict(self) -> dict[str, Any]:
        # The fields as they are (the tuples are made lists below), not copied deeply first
        data = {name: getattr(self, name) for name in field_names(self)}  # type: ignore[union-attr]
        data["field_paths"] = list(self.field_paths)
        data["fixes"] = list(self.fixes)
        data["label"] = self.label
        data["locations"] = [loc.to_dict() for loc in self.locations]
        data["url"] = self.url
        return data


class Coverage:
    """Which rules a check checked (engine/coverage.py): per rule id "checked" (its `when` held
    and it ran on inputs that were given and read), "not_applicable" (its `when` is false for
    these inputs) or "not_checked" (an input it reads was not given or could not be read, or
    sglang stops at an earlier rule first); `reasons`: why, each with the rule ids; `adapters`:
    each adapter's own counts, in input order.

    A check hands over its raw statuses (`source`, a callable returning status, reasons and
    adapters); they are folded into these dicts on first use, so `check()` pays for coverage
    only when something reads it."""

    __slots__ = ("_status", "_reasons", "_adapters", "notes", "_source")

    def __init__(
        self,
        status: dict[str, str] | None = None,
        reasons: dict[str, list[str]] | None = None,
        notes: tuple[str, ...] = (),
        adapters: list[dict[str, Any]] | None = None,
        *,
        source: Any = None,
    ):
        self._status, self._reasons, self._adapters = status or {}, reasons or {}, adapters or []
        # What the counts alone do not say (e.g. LoRA is off, so the LoRA checks do not apply).
        self.notes = tuple(notes)
        self._source = source

    def _resolved(self) -> None:
        if self._source is not None:
            self._status, self._reasons, self._adapters = self._source()
            self._source = None

    @property
    def status(self) -> dict[str, str]:
        self._resolved()
        return self._status

    @property
    def reasons(self) -> dict[str, list[str]]:
        self._resolved()
        return self._reasons

    @property
    def adapters(self) -> list[dict[str, Any]]:
        self._resolved()
        return self._adapters

    def count(self, status: str) -> int:
        return list(self.status.values()).count(status)

    @property
    def checked(self) -> int:
        return self.count("checked")

    @property
    def not_applicable(self) -> int:
        return self.count("not_applicable")

    @property
    def not_checked(self) -> int:
        return self.count("not_checked")

    def summary(self) -> str:
        """E.g. "96 checked, 38 not checked (no --model)"; "" for a report built without one."""
        if not self.status:
            return ""
        parts = [f"{self.checked} checked"]
        if self.not_applicable:
            parts.append(f"{self.not_applicable} not applicable")
        if self.not_checked:
            why = list(self.reasons)
            said = why[0] if len(why) == 1 else "; ".join(f"{r}: {len(ids)}" for r, ids in self.reasons.items())
            parts.append(f"{self.not_checked} not checked ({said})")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "checked": self.checked,
            "not_applicable": self.not_applicable,
            "not_checked": self.not_checked,
            "not_checked_reasons": {reason: list(ids) for reason, ids in self.reasons.items()},
            "notes": list(self.notes),
            "rules": dict(self.status),
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Coverage):
            return NotImplemented
        return (self.status, self.reasons, self.notes, self.adapters) == (other.status, other.reasons, other.notes, other.adapters)

    def __repr__(self) -> str:
        return f"Coverage({self.summary() or 'none'})"

    def __reduce__(self) -> tuple[Any, ...]:  # (a report travels with SglangWouldRaise through pickle)
        return (Coverage, (self.status, self.reasons, self.notes, self.adapters))


class Report:
    """What a check found: its problems in sglang's order, what it checked and how (the
    fields below). `replace(**changes)` makes a changed copy (also `copy.replace`, Python 3.13)."""

    # The fields, in order (compared by `==` and shown by `repr`, but for `fix_source`).
    FIELDS = (
        "problems", "given_facts", "not_given", "not_read", "sglang_version", "sglang_version_from", "rules_evaluated", "adapters",
        "ignored", "selection", "first_ignored", "coverage", "strict", "fail_on_warning", "fix_source",
    )  # fmt: skip
    fix_source: Any = None  # (a report unpickled without it: see __getstate__)

    def __init__(
        self,
        problems: list[Problem] | None = None,
        given_facts: dict[str, Any] | None = None,
        not_given: list[str] | None = None,
        not_read: list[str] | None = None,
        sglang_version: str = "0.5.23",
        sglang_version_from: str = "",
        rules_evaluated: int = 0,
        adapters: list[dict[str, Any]] | None = None,
        ignored: list[dict[str, Any]] | None = None,
        selection: dict[str, Any] | None = None,
        first_ignored: dict[str, Any] | None = None,
        coverage: Coverage | None = None,
        strict: bool = False,
        fail_on_warning: bool = False,
        fix_source: Any = None,
    ):
        self.problems = [] if problems is None else problems
        self.given_facts = {} if given_facts is None else given_facts
        # Inputs not given ("config", "model", "platform"): the checks that depend on them ran on
        # placeholder defaults (facts.inputs_given), so they say nothing about the real input.
        self.not_given = [] if not_given is None else not_given
        # Paths the server arguments name that sglang would read but are not on this machine (a hub
        # id for --model-path, a missing --lora-paths folder): what reads them is not checked.
        self.not_read = [] if not_read is None else not_read
        self.sglang_version = sglang_version
        # Why that release (inputs/release.py): "from --sglang-version", "from the image tag in deploy.yaml:14", ...
        self.sglang_version_from = sglang_version_from
        self.rules_evaluated = rules_evaluated
        # Every adapter checked, in input order: {"name", "path", "form"} (form "unreadable" for an
        # adapter directory that could not be read).
        self.adapters = [] if adapters is None else adapters
        # Problems left out by --select / --ignore or the project's settings (engine/selection.py):
        # {"rule_id", "severity", "message", "adapter", "reason", "by"}; never silently dropped.
        self.ignored = [] if ignored is None else ignored
        # The selection applied (engine/selection.Selection.to_dict()), None when none was.
        self.selection = selection
        # What sglang raises first when that problem was ignored or not selected (sglang still
        # raises it first: a selection changes what is shown, never what sglang does).
        self.first_ignored = first_ignored
        # Which rules were checked, not applicable or not checked, and why (engine/coverage.py).
        self.coverage = Coverage() if coverage is None else coverage
        # `check --strict` (a CI gate): warnings and rules not checked fail too (`passes`, `exit_code`).
        self.strict = strict
        # `check --fail-on warning`: any warning fails too (rules not checked do not; that is strict).
        self.fail_on_warning = fail_on_warning
        # What `fixes()` computes the fixes from: (inputs, facts, rules by id) of the check that made
        # this report (engine/evaluate.py), None for a report built otherwise.
        self.fix_source = fix_source

    def replace(self, **changes: Any) -> "Report":
        """A copy with `changes` (field names) replaced, as `dataclasses.replace` makes it."""
        unknown = set(changes) - set(self.FIELDS)
        if unknown:
            raise TypeError(f"Report has no field {sorted(unknown)[0]!r}")
        return Report(**{name: changes[name] if name in changes else getattr(self, name) for name in self.FIELDS})

    __replace__ = replace  # copy.replace (Python 3.13)

    def _compared(self) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in self.FIELDS[:-1]])

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._compared() == other._compared()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]  # (mutable)

    def __repr__(self) -> str:
        return "Report(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS[:-1]) + ")"

    def fixes(self) -> list[Any]:
        """The machine-applicable fixes of this report's problems (`inkling_compat.engine.fixes.Fix`, from the check's `FixSource`:
        rule, safety, edits with their computed values, the file and line they touch, whether
        they can be applied); [] when the report does not know the check it came from."""
        return [] if self.fix_source is None else self.fix_source.fixes(self)

    def __getstate__(self) -> dict[str, Any]:
        # A pickled report (SglangWouldRaise through a process pool) travels without the
        # check's inputs, facts and rules: fixes() is for the process that checked.
        return {k: v for k, v in self.__dict__.items() if k != "fix_source"}

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
        """What sglang would raise first: the first error of origin sglang or argparse; None
        when sglang raises nothing (derived predictions and inkling-compat's own findings are
        not raised by sglang: see `headline`)."""
        return next((p for p in self.errors if p.raised_by_sglang), None)

    @property
    def headline(self) -> Problem | None:
        """The error the summary names: `first`; else the first derived error (sglang accepts
        the input, then fails); else the first of inkling-compat's own findings."""
        errors = self.errors
        for origins in (RAISED_BY_SGLANG, {"derived"}):
            found = next((p for p in errors if p.origin in origins), None)
            if found is not None:
                return found
        return errors[0] if errors else None

    def headline_label(self) -> str:
        """The words before the headline's text: "sglang 0.5.23 would first raise", "sglang
        0.5.23 accepts this and then" or "inkling-compat" ("" without errors)."""
        top = self.headline
        if top is None:
            return ""
        if self.first_ignored is not None:  # sglang stops at the ignored one first
            return f"of the problems shown, sglang {self.sglang_version} then raises" if top.raised_by_sglang else "of the problems shown"
        if top.raised_by_sglang:
            return f"sglang {self.sglang_version} would first raise"
        if top.origin == "derived":
            return f"sglang {self.sglang_version} accepts this and then"
        return "inkling-compat"

    def strict_failures(self) -> list[str]:
        """What `--strict` fails on besides errors: each warning and the rules not checked
        (empty: the strict gate passes if there are no errors either)."""
        out = [f"warning {p.rule_id}{f' [{p.adapter}]' if p.adapter else ''}: {p.message}" for p in self.warnings]
        return out + [text for text, _ in self.not_checked()]

    def not_checked(self) -> list[tuple[str, list[str]]]:
        """Per reason a rule was not checked: its line ("38 rule(s) not checked (no adapter):
        a, b, ...") and the rule ids. Under --strict these fail the gate without any problem
        to show, so every format shows them (report/shared.not_checked_failures)."""
        return [(f"{len(ids)} rule(s) not checked ({reason}): {', '.join(ids)}", list(ids)) for reason, ids in self.coverage.reasons.items()]

    def passes(self, strict: bool | None = None) -> bool:
        """No errors; in strict mode (`strict`, default: the report's own `strict`), also no
        warning and no rule not checked: the gate `check --strict` applies for CI."""
        strict = self.strict if strict is None else strict
        if self.fail_on_warning and self.warnings:
            return False
        return self.ok and not (strict and self.strict_failures())

    @property
    def exit_code(self) -> int:
        """What `inkling-compat check` exits with for this report (0 or 1; `--strict`: as `strict` says)."""
        return 0 if self.passes() else 1

    def raise_for_problems(self) -> None:
        """Raise the headline error as a `SglangWouldRaise`: an Exception in every case (for
        argparse rules too), with the problem's text, and also an instance of the class sglang
        would raise where that is an Exception. Nothing when there is no error."""
        top = self.headline
        if top is None:
            return
        sglang_class = None if top.origin == "inkling-compat" else top.error_class
        raise _raise_class(sglang_class)(top.message, problem=top, report=self)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "ok": self.ok,
            # 0 or 1, as the command exits; with "strict": true (--strict), warnings and rules
            # not checked fail too, each named in "strict_failures".
            "exit_code": self.exit_code,
            "strict": self.strict,
            **({"strict_failures": self.strict_failures()} if self.strict else {}),
            "sglang_version": self.sglang_version,
            "sglang_version_from": self.sglang_version_from,
            "rules_evaluated": self.rules_evaluated,
            "coverage": self.coverage.to_dict(),
            "given_facts": self.given_facts,
            "not_given": list(self.not_given),
            "not_read": list(self.not_read),
            # What sglang raises first (null when it raises nothing), and the error the summary
            # names with its label ("sglang 0.5.23 would first raise", "... accepts this and then",
            # "inkling-compat").
            "first": self.first.to_dict() if self.first else None,
            "first_ignored": self.first_ignored,
            "headline": {"label": self.headline_label(), "problem": self.headline.to_dict()} if self.headline else None,
            "problems": [p.to_dict() for p in self.problems],
            "ignored": list(self.ignored),
            "selection": self.selection,
            "adapters": self.by_adapter(),
        }
        return out

    def by_adapter(self) -> list[dict[str, Any]]:
        """Per adapter, in input order: name, path, form, ok, counts and its own problems
        (rule id, severity, message); problems not tied to an adapter are left out."""
        own: dict[int, list[Problem]] = {}
        for p in self.problems:
            if p.adapter_index is not None:
                own.setdefault(p.adapter_index, []).append(p)
        out = []
        covered = self.coverage.adapters
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
                    # this adapter's own checked / not_applicable / not_checked counts and reasons
                    **({"coverage": covered[index]} if index < len(covered) else {}),
                )
            )
        return out

    def __str__(self) -> str:
        """The terminal text without colour, as `check` prints it (report/text.py)."""
        return text_renderer(self)


def _unwired(report: Report) -> str:
    raise RuntimeError("report/text.py's renderer is handed in by inkling_compat/report/__init__.py")


# `str(report)`: report/text.py's `render_text`, which reads this module; the package hands it
# in (inkling_compat/report/__init__.py), so the model imports no renderer.
text_renderer: Callable[[Report], str] = _unwired
