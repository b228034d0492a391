"""How a check runs its rules: one interface, two evaluators, and every cache of the engine.

An `Evaluator` gives a check what it runs on:

- `plan(rules, version)`: the rule set's `Plan` (engine/plan.py: scopes, what each rule reads);
- `selection(plan, scope, missing)`: one scope's rules sorted by what the missing inputs allow;
- `prepare(rules)`: those rules ready to run, and `prepared(plan, selections, part)` the same
  for the `part` ("run", "when_only", "absent": those whose `when` may tell *not applicable* in a
  check without adapters) rules of those selections: `run(ctx)` returns, per rule in order, its `(when) && (condition)`
  (True, False, or the `RuleEvaluationError` it raised) and its `when` alone (True, False, or
  None: unknown); `applies(ctx)` returns the `when`s only;
- `context(variables)`: the CEL context the rules run in.

`REFERENCE` does exactly that, rule by rule, and computes each of them afresh every time: the
meaning. `FAST` gives the same results (compared on every rule example by
tests/test_rule_examples.py, on the hostile corpus by tests/test_evaluators.py) and holds every shortcut and every cache the engine takes:

- each expression runs as its generated Python form (engine/python_first.py), exactly CEL's
  value or an exception, and as its CEL program only where that raised: the CEL extension is
  imported, a program compiled and the variables converted into a CEL context only then (a
  context is a `Variables`; the reference runs CEL only, in a context converted from it);
- the plan of a rule set and version, the selections per set of missing inputs and the
  prepared rules per selection are kept (bounded) for the next check;
- rules that share a `when` (the named guards of rules/_guards.yaml) run behind one
  evaluation of it, and the guards of one list run together, each distinct `&&` operand
  once (engine/guards.py): where a guard is false, so is every `(when) && (condition)` of
  its group, and their programs are not run; where it is true, a rule's condition runs
  alone (`true && x` is `x` for a bool `x`; anything else is what the joined program says);
- in a check of three or more adapters, the adapter rules that read nothing of who an adapter
  is run once per distinct content, the others in a context of what they read (engine/alike.py);
- the facts of inputs of equal content (engine/content.py) are derived once;
- the contexts of a check of at most one adapter are kept with them (its variables are built
  from those inputs alone);
- a built context is kept for inputs whose variables are equal (`_ContextStore`), so a
  repeated check of the same inputs converts nothing into CEL (where CEL ran), and with it what each prepared
  rule list gave in it (`_Remembered`): the same inputs run each rule once per process.

A cache only ever hands back what the reference would compute for the same key: none of them
decides an outcome. INKLING_COMPAT_NO_CACHE=1 turns the kept contexts off, like the input
readers' caches. The figures these shortcuts save are in docs/performance.md.
"""

from __future__ import annotations

import marshal
import os

from inkling_compat.engine.context import Contexts, cel_context
from inkling_compat.engine.guards import Guards
from inkling_compat.engine.python_first import Program, Variables, cel_of, joined_program
from inkling_compat.engine.plan import Plan, Selection
from inkling_compat.engine.rule_compile import CompiledRule
from inkling_compat.errors import RuleEvaluationError

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Protocol
else:
    Protocol = object  # (Prepared and Evaluator are the type checker's protocols: plain classes at run time)

PARTS = ("run", "when_only", "absent")


class Prepared(Protocol):
    def run(self, ctx: Any) -> tuple[list[Any], list[Any]]: ...

    def applies(self, ctx: Any) -> list[Any]: ...


class Evaluator(Protocol):
    def prepare(self, rules: tuple[CompiledRule, ...]) -> Prepared: ...

    def plan(self, rules: tuple[CompiledRule, ...], version: str) -> Plan: ...

    def selection(self, plan: Plan, scope: str, missing: Any) -> Selection: ...

    def prepared(self, plan: Plan, selections: tuple[Selection, ...], part: str) -> Prepared: ...

    def context(self, variables: dict[str, Any]) -> Any: ...

    def split(self, plan: Plan, selection: Selection) -> Any: ...

    def derive(self, inputs: Any) -> Any: ...

    def contexts_of(self, inputs: Any, facts: Any, plan: Plan) -> Any: ...


def part_rules(selections: tuple[Selection, ...], part: str) -> tuple[CompiledRule, ...]:
    """The `part` rules of `selections`, one selection after the other."""
    return tuple(c for s in selections for c in {"run": s.run_rules, "when_only": s.when_only_rules, "absent": s.absent_rules}[part])


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
        ctx = cel_of(ctx)  # (the fast evaluator's context, converted: the reference runs CEL only)
        return [_hit(c, ctx) for c in self.rules], self.applies(ctx)

    def applies(self, ctx: Any) -> list[Any]:
        ctx = cel_of(ctx)
        return [_when(c, ctx) for c in self.rules]


class ReferenceEvaluator:
    """Each rule's own programs, one after the other, in a context built for this check; the
    plan and the selections computed for every check."""

    def plan(self, rules: tuple[CompiledRule, ...], version: str) -> Plan:
        return Plan(rules, version)

    def selection(self, plan: Plan, scope: str, missing: Any) -> Selection:
        return plan.selection(scope, missing)

    def prepare(self, rules: tuple[CompiledRule, ...]) -> Prepared:
        return _ReferencePrepared(rules)

    def prepared(self, plan: Plan, selections: tuple[Selection, ...], part: str) -> Prepared:
        return self.prepare(part_rules(selections, part))

    def context(self, variables: dict[str, Any]) -> Any:
        return cel_context(variables)

    def split(self, plan: Plan, selection: Selection) -> Any:
        """None: every adapter's rules run in its whole context (engine/alike.py is the fast
        evaluator's)."""
        return None

    def derive(self, inputs: Any) -> Any:
        """The facts of `inputs` (facts/derive.py), derived afresh."""
        from inkling_compat.facts.derive import derive

        return derive(inputs)

    def contexts_of(self, inputs: Any, facts: Any, plan: Plan) -> Any:
        """The check's CEL contexts (engine/context.py), built afresh."""
        return Contexts(inputs, facts, plan, build=self.context)


class _Guarded:
    """A list's `when && condition` results behind its shared `when` guards (see the module's
    docstring). A rule alone behind its `when` gets a guard too: coverage needs to know
    whether its `when` held (not applicable) or its condition was false (checked)."""

    __slots__ = ("rules", "groups", "guards", "conditions", "joined")

    def __init__(self, rules: tuple[CompiledRule, ...], compile: Any):
        """`compile(text)`: a guard conjunct's program (engine/python_first.Program)."""
        self.rules = rules
        by_when: dict[str, list[int]] = {}
        for index, c in enumerate(rules):
            by_when.setdefault(c.rule.when.strip(), []).append(index)
        # Per group: its slot in `guards` (None for `true`); per member: index, rule. A program
        # is compiled when first run: a condition where its guard first holds, a guard's own
        # `when` where its operands do not decide it (engine/guards.py).
        # Each program runs its Python form first (engine/python_first.py), the rule's CEL one
        # where the form cannot answer.
        self.groups: list[tuple[int | None, list[tuple[int, CompiledRule]]]] = []
        self.conditions: list[Any] = [None] * len(rules)  # (each rule's condition program, once made)
        self.joined: list[Any] = [None] * len(rules)  # (each rule's `(when) && (condition)`, once made)
        programs, conjuncts = [], []
        for when, members in by_when.items():
            slot = None
            if when != "true":
                slot = len(programs)
                first = rules[members[0]]
                programs.append(lambda first=first: Program(first.rule.when.strip(), lambda: first.when_program))
                conjuncts.append(first.when_conjuncts)
            self.groups.append((slot, [(i, rules[i]) for i in members]))
        self.guards = Guards(programs, compile, conjuncts)

    def run(self, ctx: Any) -> tuple[list[Any], list[Any]]:
        try:
            return self._run(ctx)
        except Exception:  # noqa: BLE001 - located rule by rule, as the reference does (in CEL: its error texts)
            cel = cel_of(ctx)
            return [_hit(c, cel) for c in self.rules], self.applies(ctx)

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
            for index, c in members:
                if held is True:
                    condition = self.conditions[index]
                    if condition is None:
                        condition = self.conditions[index] = Program(c.rule.condition, lambda c=c: c.condition_program)
                    try:
                        value = condition.execute(ctx)
                    except Exception:  # noqa: BLE001 - the joined program below raises it
                        value = None
                    if value is True or value is False:
                        out[index] = value
                        continue
                joined = self.joined[index]
                if joined is None:
                    joined = self.joined[index] = joined_program(c)
                out[index] = joined.execute(ctx) is True  # (an error: the whole list goes rule by rule)
        return out, applies

    def applies(self, ctx: Any) -> list[Any]:
        applies: list[Any] = [True] * len(self.rules)
        values = self.guards.values(ctx)  # (None where it fails, e.g. `adapter` undefined: unknown)
        for slot, members in self.groups:
            held = values[slot] if slot is not None else True
            for member in members:
                applies[member[0]] = held
        return applies


class _Kept:
    """A bounded map: at most `size` entries, the oldest dropped first."""

    __slots__ = ("size", "entries")

    def __init__(self, size: int):
        self.size, self.entries = size, {}  # (dicts keep insertion order: the first is the oldest)

    def get(self, key: Any) -> Any:
        return self.entries.get(key)

    def put(self, key: Any, value: Any) -> Any:
        if len(self.entries) >= self.size:
            del self.entries[next(iter(self.entries))]
        self.entries[key] = value
        return value

    def clear(self) -> None:
        self.entries.clear()


class _ContextStore:
    """Built contexts by their variables' exact content: marshal writes types (bool is not int,
    1.0 is not 1, a tuple is not a list), dict order and values, so equal bytes are equal
    variables (an object marshal cannot write is simply not kept). A check of inputs seen
    before skips the conversion into CEL (per map key, string and container) and the
    environment CEL builds on a context's first evaluation: a large part of a check of the
    bundled examples (docs/performance.md). A kept context is only ever executed, never
    updated (`Contexts.per_adapter`, the one that is updated, is built fresh). Bounded in
    count and key size.

    Each kept context also keeps what prepared rules gave in it (`results`): CEL programs are
    pure functions of the context's variables, and a kept context's variables never change, so
    a rule set runs once per distinct input, not once per check of it."""

    MAX_ENTRIES = 32
    MAX_KEY = 64 * 1024

    def __init__(self) -> None:
        self.built = _Kept(self.MAX_ENTRIES)
        self._results: dict[int, tuple[Any, dict[Any, Any]]] = {}  # id(kept context) -> (it, results by prepared)

    def context(self, variables: dict[str, Any]) -> Any:
        if os.environ.get("INKLING_COMPAT_NO_CACHE", "") not in ("", "0"):
            return Variables(variables)
        try:
            key = marshal.dumps(variables)
        except ValueError:  # a value marshal cannot write: built every time
            return Variables(variables)
        if len(key) > self.MAX_KEY:
            return Variables(variables)
        ctx = self.built.get(key)
        if ctx is None:
            if len(self.built.entries) >= self.built.size:  # (the oldest goes, and what it kept)
                self._results.pop(id(self.built.entries[next(iter(self.built.entries))]), None)
            ctx = self.built.put(key, Variables(variables))
            self._results[id(ctx)] = (ctx, {})
        return ctx

    def results(self, ctx: Any) -> dict[Any, Any] | None:
        """What was computed in `ctx` if it is a kept context (its variables never change), else
        None. (The entry holds the context itself, so its id is not reused while it is here.)"""
        entry = self._results.get(id(ctx))
        return entry[1] if entry is not None and entry[0] is ctx else None

    def clear(self) -> None:
        self.built.clear()
        self._results.clear()


class _Remembered:
    """A prepared rule list whose results in a kept context (`_ContextStore.results`) are kept
    with that context: the same lists of the same values (copies), computed once. A result
    holding an error is not kept (it is computed again, as the reference would)."""

    __slots__ = ("prepared", "store")

    def __init__(self, prepared: Any, store: _ContextStore):
        self.prepared, self.store = prepared, store

    def run(self, ctx: Any) -> tuple[list[Any], list[Any]]:
        kept = self.store.results(ctx)
        if kept is None:
            return self.prepared.run(ctx)
        found = kept.get((self, "run"))
        if found is None:
            found = self.prepared.run(ctx)
            if any(isinstance(hit, Exception) for hit in found[0]):
                return found
            kept[(self, "run")] = found
        return list(found[0]), list(found[1])

    def applies(self, ctx: Any) -> list[Any]:
        kept = self.store.results(ctx)
        if kept is None:
            return self.prepared.applies(ctx)
        found = kept.get((self, "applies"))
        if found is None:
            found = kept[(self, "applies")] = self.prepared.applies(ctx)
        return list(found)


class _FastContexts(Contexts):
    """A check's contexts whose second and later adapters' context is a `Variables` too (its
    CEL context built and updated only where an expression needs CEL)."""

    adapter_build = staticmethod(Variables)


class FastEvaluator:
    """The reference's results with the shortcuts and caches of the module's docstring."""

    MAX_FACTS_KEY = 256 * 1024  # (inputs past this, or with more adapters, are derived every time:
    MAX_FACTS_ADAPTERS = 16  # a fleet is rarely checked twice alike, and its key costs per adapter)

    def __init__(self) -> None:
        self._plans = _Kept(8)  # (rules, version) -> Plan
        self._selections = _Kept(64)  # (plan, scope, missing) -> Selection: a handful of distinct `missing`
        self._prepared = _Kept(64)  # (plan, part, selections) -> _Guarded
        self._conjuncts = _Kept(4096)  # a guard conjunct's text -> its program (a fixed set per rule set)
        self._splits = _Kept(64)  # (plan, adapter selection) -> engine/alike.Split
        self._facts = _Kept(16)  # the inputs' content (engine/content.py) -> their facts
        self._contexts = _Kept(16)  # (plan, the inputs' content, their `input`) -> Contexts of a check of at most one adapter
        self._last: tuple[Any, Any] = (None, None)  # the inputs last derived, and their content key
        self.contexts = _ContextStore()

    def plan(self, rules: tuple[CompiledRule, ...], version: str) -> Plan:
        key = (rules, version)
        found = self._plans.get(key)
        return found if found is not None else self._plans.put(key, Plan(rules, version))

    def selection(self, plan: Plan, scope: str, missing: Any) -> Selection:
        key = (plan, scope, missing)
        found = self._selections.get(key)
        return found if found is not None else self._selections.put(key, plan.selection(scope, missing))

    def prepare(self, rules: tuple[CompiledRule, ...]) -> Prepared:
        return _Guarded(rules, self._compile)

    def prepared(self, plan: Plan, selections: tuple[Selection, ...], part: str) -> Prepared:
        key = (plan, part, selections)
        found = self._prepared.get(key)
        return found if found is not None else self._prepared.put(key, _Remembered(self.prepare(part_rules(selections, part)), self.contexts))

    def context(self, variables: dict[str, Any]) -> Any:
        return self.contexts.context(variables)

    def derive(self, inputs: Any) -> Any:
        """The facts of `inputs`, derived once per distinct content (engine/content.py: the
        exact content of everything `derive` reads). The facts are frozen records, shared by
        the checks of equal inputs (read them, never change them)."""
        from inkling_compat.facts.derive import derive

        if os.environ.get("INKLING_COMPAT_NO_CACHE", "") not in ("", "0"):
            return derive(inputs)
        from inkling_compat.engine.content import inputs_key

        key = inputs_key(inputs) if len(inputs.adapters) <= self.MAX_FACTS_ADAPTERS else None
        self._last = (inputs, key)
        if key is None or len(key) > self.MAX_FACTS_KEY:
            return derive(inputs)
        found = self._facts.get(key)
        return found if found is not None else self._facts.put(key, derive(inputs))

    def contexts_of(self, inputs: Any, facts: Any, plan: Plan) -> Any:
        """The check's CEL contexts; for a check of at most one adapter, those of an earlier
        check of inputs of equal content (engine/content.py) and the same rules' `input`
        (unknown keys, refusals, parse warnings): its variables are built from those alone
        (the facts too), so they are equal, and so is what each rule gives in them."""
        last_inputs, key = self._last
        if last_inputs is not inputs or key is None or len(inputs.adapters) > 1 or os.environ.get("INKLING_COMPAT_NO_CACHE", "") not in ("", "0"):
            return _FastContexts(inputs, facts, plan, build=self.context)
        try:
            key = (plan, key, marshal.dumps(inputs.input_variable()))
        except ValueError:
            return _FastContexts(inputs, facts, plan, build=self.context)
        found = self._contexts.get(key)
        if found is not None and found.facts is facts:  # (the same facts: derived from the same content)
            return found
        return self._contexts.put(key, _FastContexts(inputs, facts, plan, build=self.context))

    def split(self, plan: Plan, selection: Selection) -> Any:
        """An adapter selection's rules split into identity and content rules (engine/alike.py)."""
        from inkling_compat.engine.alike import Split

        key = (plan, selection)
        found = self._splits.get(key)
        return found if found is not None else self._splits.put(key, Split(selection, self.prepare))

    def _compile(self, expression: str) -> Any:
        """A guard conjunct's program: its Python form first; CEL's compiled now where it has
        none (a conjunct that does not compile is found here: engine/guards.py), else when first
        needed (a form is made only of a shipped rule's text, which compiles)."""
        program = self._conjuncts.get(expression)
        if program is None:
            from inkling_compat.engine.python_first import forms

            if forms().get(expression) is None:
                from inkling_compat.engine import cel

                compiled = cel.compile(expression)
                program = Program(expression, lambda: compiled)
            else:
                program = Program(expression, lambda: _cel_compile(expression))
            self._conjuncts.put(expression, program)
        return program

    def clear(self) -> None:
        """Forget everything kept (benchmarks; long-running processes)."""
        for kept in (self._plans, self._selections, self._prepared, self._conjuncts, self._splits, self._facts, self._contexts, self.contexts):
            kept.clear()
        self._last = (None, None)


def _cel_compile(expression: str) -> Any:
    from inkling_compat.engine import cel

    return cel.compile(expression)


REFERENCE = ReferenceEvaluator()
FAST = FastEvaluator()
