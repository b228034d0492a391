"""How a check runs a list of rules in one CEL context: one interface, two evaluators.

`Evaluator.prepare(rules)` gives a `Prepared` whose `run(ctx)` returns, per rule in order,
its `(when) && (condition)` (True, False, or the `RuleEvaluationError` it raised) and its
`when` alone (True, False, or None: unknown), and whose `applies(ctx)` returns the `when`s
only. `Evaluator.context(variables)` builds the CEL context the rules run in.

`REFERENCE` does exactly that, rule by rule, with a fresh context each time: the meaning.
`FAST` gives the same results (tests/test_evaluators.py compares the two on every rule
example and the hostile corpus) and holds every shortcut the engine takes:

- rules that share a `when` (the named guards of rules/_guards.yaml) run behind one
  evaluation of it, and the guards of one list run together, each distinct `&&` operand
  once (engine/guards.py): where a guard is false, so is every `(when) && (condition)` of
  its group, and their programs are not run; where it is true, a rule's condition runs
  alone (`true && x` is `x` for a bool `x`; anything else is what the joined program says);
- a built context is kept for inputs whose variables are equal (engine/context.py
  `shared_context`), so a repeated check of the same inputs converts nothing into CEL.

The figures these shortcuts save are in docs/performance.md.
"""

from __future__ import annotations

from typing import Any, Protocol

from inkling_compat.engine.context import cel_context, shared_context
from inkling_compat.engine.guards import Guards
from inkling_compat.engine.rules import CompiledRule, compile_expression
from inkling_compat.errors import RuleEvaluationError


class Prepared(Protocol):
    def run(self, ctx: Any) -> tuple[list[Any], list[Any]]: ...

    def applies(self, ctx: Any) -> list[Any]: ...


class Evaluator(Protocol):
    def prepare(self, rules: tuple[CompiledRule, ...]) -> Prepared: ...

    def context(self, variables: dict[str, Any]) -> Any: ...


def _truth(value: Any) -> Any:
    return value if value is True or value is False else None


def _hit(c: CompiledRule, ctx: Any) -> Any:
    """The rule's joined program: True, False, or the error it raised."""
    try:
        return c.program.execute(ctx) is True
    except Exception as exc:  # noqa: BLE001 - reported only if the rule is reached
        return RuleEvaluationError(c.rule.id, f"{type(exc).__name__}: {exc}")


def _when(c: CompiledRule, ctx: Any) -> Any:
    if c.rule.when.strip() == "true":
        return True
    try:
        return _truth(c.when_program.execute(ctx))
    except Exception:  # noqa: BLE001 - unknown (e.g. `adapter` undefined without adapters)
        return None


class _ReferencePrepared:
    __slots__ = ("rules",)

    def __init__(self, rules: tuple[CompiledRule, ...]):
        self.rules = rules

    def run(self, ctx: Any) -> tuple[list[Any], list[Any]]:
        return [_hit(c, ctx) for c in self.rules], self.applies(ctx)

    def applies(self, ctx: Any) -> list[Any]:
        return [_when(c, ctx) for c in self.rules]


class ReferenceEvaluator:
    """Each rule's own programs, one after the other, in a context built for this check."""

    def prepare(self, rules: tuple[CompiledRule, ...]) -> Prepared:
        return _ReferencePrepared(rules)

    def context(self, variables: dict[str, Any]) -> Any:
        return cel_context(variables)


class _Guarded:
    """A list's `when && condition` results behind its shared `when` guards (see the module's
    docstring). A rule alone behind its `when` gets a guard too: coverage needs to know
    whether its `when` held (not applicable) or its condition was false (checked)."""

    __slots__ = ("rules", "groups", "guards")

    def __init__(self, rules: tuple[CompiledRule, ...]):
        self.rules = rules
        by_when: dict[str, list[int]] = {}
        for index, c in enumerate(rules):
            by_when.setdefault(c.rule.when.strip(), []).append(index)
        # Per group: its slot in `guards` (None for `true`); per member: index, condition, rule.
        self.groups: list[tuple[int | None, list[tuple[int, Any, CompiledRule]]]] = []
        programs = []
        for when, members in by_when.items():
            slot = None
            if when != "true":
                slot = len(programs)
                programs.append(rules[members[0]].when_program)
            self.groups.append((slot, [(i, rules[i].condition_program, rules[i]) for i in members]))
        self.guards = Guards(programs, compile_expression)

    def run(self, ctx: Any) -> tuple[list[Any], list[Any]]:
        try:
            return self._run(ctx)
        except Exception:  # noqa: BLE001 - located rule by rule, as the reference does
            return [_hit(c, ctx) for c in self.rules], self.applies(ctx)

    def _run(self, ctx: Any) -> tuple[list[Any], list[Any]]:
        size = len(self.rules)
        out: list[Any] = [False] * size
        applies: list[Any] = [True] * size
        values = self.guards.values(ctx)
        for slot, members in self.groups:
            held: Any = True
            if slot is not None:
                held = values[slot]
                if held is False:
                    for member in members:
                        applies[member[0]] = False
                    continue
                if held is None:
                    for member in members:
                        applies[member[0]] = None
            for index, condition, c in members:
                if held is True:
                    try:
                        value = condition.execute(ctx)
                    except Exception:  # noqa: BLE001 - the joined program below raises it
                        value = None
                    if value is True or value is False:
                        out[index] = value
                        continue
                out[index] = c.program.execute(ctx) is True  # (an error: the whole list goes rule by rule)
        return out, applies

    def applies(self, ctx: Any) -> list[Any]:
        applies: list[Any] = [True] * len(self.rules)
        values = self.guards.values(ctx)  # (None where it fails, e.g. `adapter` undefined: unknown)
        for slot, members in self.groups:
            held = values[slot] if slot is not None else True
            for member in members:
                applies[member[0]] = held
        return applies


class FastEvaluator:
    """The reference's results with the shortcuts of the module's docstring."""

    def prepare(self, rules: tuple[CompiledRule, ...]) -> Prepared:
        return _Guarded(rules)

    def context(self, variables: dict[str, Any]) -> Any:
        return shared_context(variables)


REFERENCE = ReferenceEvaluator()
FAST = FastEvaluator()
