"""A validated rule with its CEL programs compiled (`CompiledRule`): the joined and split
`when`/`condition`, the params, the variants per sglang version, and what each reads.

A rule of the compiled artifact (`CompiledRule.stored`) holds what it reads as the artifact says:
the parser of engine/cel_tree.py, the path check of engine/paths.py and this module's regexes
are for rules compiled from their files, and imported or compiled there (not at every start)."""

from __future__ import annotations

import re
from functools import lru_cache, partial

from inkling_compat.engine.rule_record import PartialRule
from inkling_compat.errors import RuleFileError as InputError

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:  # a pydantic rule_schema.Rule (compiled from files) or a plain rule_record.Rule (from the artifact)
    from typing import Any
    from inkling_compat.engine import cel_tree
    from inkling_compat.engine.rule_record import Rule

# A param that is a plain variable path (`adapter_facts.pool_fit.weight`), or `first(...)` of
# such paths (the first that is not null), is read from the typed values themselves, not
# through CEL: an int keeps every digit (CEL's ints are 64-bit).
_PATH = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+"


@lru_cache(maxsize=1)
def _param_forms() -> tuple["re.Pattern[str]", "re.Pattern[str]"]:
    """(a plain path, `first(...)` of plain paths)."""
    return re.compile(rf"^{_PATH}$"), re.compile(rf"^first\(\s*({_PATH}(?:\s*,\s*{_PATH})*)\s*\)$")


def plain_paths(expression: str) -> tuple[tuple[str, ...], ...] | None:
    """The variable paths a param names, in order (None: it is an expression)."""
    from inkling_compat.engine.paths import VARIABLES

    plain, first = _param_forms()
    text = expression.strip()
    found = first.match(text)
    texts = [t.strip() for t in found.group(1).split(",")] if found else [text] if plain.match(text) else []
    paths = tuple(tuple(t.split(".")) for t in texts)
    return paths if paths and all(p[0] in VARIABLES for p in paths) else None



class CompiledRule:
    """A validated rule with its CEL programs compiled once."""

    __slots__ = (
        "rule", "expression", "_when_program", "_condition_program", "_program", "_param_programs", "exact_params", "file",
        "paths", "cel_paths", "when_paths", "gate_paths", "fields", "when_conjuncts", "_versions", "_programs", "rank", "reads", "by_name",
    )

    def __init__(self, rule: Rule, file: str, programs: "dict[str, Any] | None" = None, analyses: "cel_tree.Analyses | None" = None):
        """`programs` and `analyses`: the compiled programs and the parse-tree readings of the
        rule set being built, by text, shared by its rules (a fifth of the expressions are the
        same text: a variant's `when`, the same `params` hole); a program is read-only
        (`execute(context)`)."""
        from inkling_compat.engine import cel_tree
        from inkling_compat.engine.paths import referenced_paths

        self.rule = rule
        self.file = file
        self.rank = 0  # its place in the rule set's check order (engine/rule_order.py), which reports sort by
        # What coverage names it reading (engine/coverage.rule_reads) and whether it reads
        # `facts.lora_paths` by its adapter's name only (engine/plan.py): worked out by the plan,
        # or held by the compiled artifact (`stored`).
        self.reads: Any = None
        self.by_name: bool | None = None
        self._programs = programs if programs is not None else {}
        analyses = analyses if analyses is not None else cel_tree.Analyses()
        self._versions: dict[str, CompiledRule | None] = {v: self for v in rule.sglang_versions or ()}
        self.expression = f"({rule.when}) && ({rule.condition})"
        # `when` and `condition` are compiled apart: the engine runs the `when` once per guard
        # group (engine/evaluator.py) and, where it held, the condition alone; CEL's compile
        # grows faster than the text, so two parts cost less than the joined text (figures in
        # docs/performance.md). The joined program
        # is compiled when first needed (a `when` that fails or is not a bool). Two parts that
        # compile join into one that compiles, unless a `//` comment runs on into `) && (`:
        # then the joined text is compiled too (`compile_all`), so a broken rule still fails at load.
        # Each program is compiled on first use: a check evaluates only the rules it selects
        # (a rule set built from files compiles all of them at load: `compile_all`).
        self._when_program: Any = None
        self._condition_program: Any = None
        self._program: Any = None
        # Params are read only for a rule that fires: their programs are compiled then (a
        # param that does not compile is refused when the rule set is built: `compile_all`).
        self._param_programs: dict[str, Any] | None = None
        self.exact_params = {name: paths for name, paths in ((n, plain_paths(e)) for n, e in rule.params.items()) if paths is not None}
        expressions = [e for name, e in rule.params.items() if name not in self.exact_params]
        try:
            self.when_paths = referenced_paths(rule.when, analyses)
            # What may keep the rule from firing when it reads a placeholder (engine/coverage.py).
            self.gate_paths = self.when_paths | referenced_paths(rule.condition, analyses)
            self.cel_paths = self.gate_paths.union(*(referenced_paths(e, analyses) for e in expressions))
            # Every `.name` the expressions read (engine/plan.py `item_keys`).
            self.fields = frozenset().union(*(analyses.get(e).fields for e in (rule.when, rule.condition, *rule.params.values())))
            # The guard's `&&` operands (engine/guards.py).
            self.when_conjuncts = analyses.get(rule.when.strip()).conjuncts
        except ValueError as exc:
            self.compile_all()  # an expression CEL does not compile is said so
            # (compiled by CEL, yet engine/cel_tree.py cannot parse it)
            raise InputError(file, "when/condition", f"cannot tell what it reads: {exc}") from None
        # Everything the rule reads (coverage; the load-time path check): the CEL context
        # holds only `cel_paths`, the exact params are read from the typed values.
        self.paths = self.cel_paths.union(*self.exact_params.values())
        for index, variant in enumerate(rule.variants):
            merged = rule.for_version(variant.sglang_versions[0])
            assert merged is not None
            compiled = CompiledRule(merged, f"{file} (variants[{index}])", self._programs, analyses)
            for version in variant.sglang_versions:
                self._versions[version] = compiled

    @classmethod
    def stored(cls, rule: Rule, file: str, programs: dict[str, Any], derived: tuple[Any, ...], record: Any) -> "CompiledRule":
        """A rule of the compiled artifact (a `StoredRule`), what it reads as `derived()` wrote
        it when the artifact was generated (from the same rule compiled from its files): nothing
        is parsed again. `rule`: its record (engine/rule_record.PartialRule); `record(version)`:
        its whole record, or its variant's for `version`, from which each reads the rest of its
        fields when first read."""
        if len(derived) != 10:
            raise ValueError(f"{file}: {len(derived)} derived values, not 10")
        self = object.__new__(StoredRule)
        self._derived = derived
        # Only what every check reads of every rule is set here (some two hundred rules at every
        # start): what the plan of the default release reads is the artifact's (`Plan`), the
        # paths, fields and inputs are made from `derived` when read (`StoredRule`).
        self.rule, self.file, self.rank, self._programs = rule, file, derived[0], programs
        self._when_program = self._condition_program = self._program = self._param_programs = None
        self.when_conjuncts = derived[6]
        self.by_name = derived[8]
        self._variants = None
        if derived[9]:
            self._variants = {}
            for index, (versions, values, variant_derived) in enumerate(derived[9]):
                merged = PartialRule(values, partial(record, versions[0]))
                compiled = cls.stored(merged, f"{file} (variants[{index}])", programs, variant_derived, record)
                for version in versions:
                    self._variants[version] = compiled
        return self

    def derived(self) -> tuple[Any, ...]:
        """What the rule reads, for the compiled artifact (`stored` reads it back; constants
        only: tuples, strings, numbers): its rank, exact params, paths, fields and `when`
        operands, the inputs coverage names, whether it reads `facts.lora_paths` by name, and
        per variant its versions, fields a check reads (rule_record.check_values) and the same."""
        from inkling_compat.engine import coverage
        from inkling_compat.engine.rule_record import check_values

        def paths(found: Any) -> tuple[tuple[str, ...], ...]:
            return tuple(sorted(tuple(p) for p in found))

        variants = []
        for variant in self.rule.variants:
            compiled = self.for_version(variant.sglang_versions[0])
            assert compiled is not None
            variants.append((tuple(variant.sglang_versions), check_values(compiled.rule), compiled.derived()))
        return (
            self.rank,
            tuple((name, tuple(tuple(p) for p in found)) for name, found in self.exact_params.items()),
            paths(self.when_paths),
            paths(self.gate_paths - self.when_paths),
            paths(self.cel_paths - self.gate_paths),
            tuple(sorted(self.fields)),
            tuple(self.when_conjuncts) if self.when_conjuncts is not None else None,
            tuple(tuple(sorted(names)) for names in coverage.rule_reads(self)),
            reads_lora_paths_by_name((self,)),
            tuple(variants),
        )

    @property
    def when_program(self) -> Any:
        """`when` compiled (what the engine runs once per guard group)."""
        if self._when_program is None:
            self._when_program = self._compile(self.rule.when.strip(), "when/condition")
        return self._when_program

    @property
    def condition_program(self) -> Any:
        """`condition` compiled (run where the `when` held)."""
        if self._condition_program is None:
            self._condition_program = self._compile(self.rule.condition, "when/condition")
        return self._condition_program

    @property
    def program(self) -> Any:
        """`(when) && (condition)` compiled: what the rule fires on."""
        if self._program is None:
            self._program = self._compile(self.expression, "when/condition")
        return self._program

    @property
    def param_programs(self) -> dict[str, Any]:
        """The params that are CEL expressions, compiled (on first use)."""
        if self._param_programs is None:
            self._param_programs = {
                name: self._compile(expr, f"params.{name}") for name, expr in self.rule.params.items() if name not in self.exact_params
            }
        return self._param_programs

    def compile_all(self) -> None:
        """Every program of the rule and its variants compiled now (a rule set built from
        files: a broken expression fails at load, not when the rule first fires)."""
        self.when_program, self.condition_program, self.param_programs
        if self.when_conjuncts is not None:  # (the guards compile each operand alone: engine/guards.py)
            for piece in self.when_conjuncts:
                try:
                    self._compile(piece, "when")
                except InputError:  # not an operand after all: the guards run the whole `when`
                    self.when_conjuncts = None
                    break
        if "//" in self.expression:  # a `//` comment may run on into `) && (`
            self.program
        for compiled in self._versions.values():
            if compiled is not None and compiled is not self:
                compiled.compile_all()

    def _compile(self, expression: str, field: str) -> Any:
        program = self._programs.get(expression)
        if program is None:
            from inkling_compat.engine import cel  # (imported where a program is first compiled: engine/python_first.py)

            try:
                program = self._programs[expression] = cel.compile(expression)
            except ValueError as exc:
                first = str(exc).splitlines()[0]
                raise InputError(self.file, field, f"CEL does not compile: {first}") from None
        return program

    def for_version(self, version: str) -> "CompiledRule | None":
        """This rule as compiled for `version`: itself, a variant, or None (not in that version)."""
        return self._versions.get(version)

    @property
    def pattern(self) -> "re.Pattern[str]":
        """`message_pattern` compiled. Only `explain` and the tests match log text, so the
        regexes are compiled on first use instead of at every start;
        tests/test_rule_loading.py compiles every rule's and variant's pattern."""
        try:
            return _pattern(self.rule.message_pattern)
        except re.error as exc:
            raise InputError(self.file, "message_pattern", f"not a valid regex: {exc}") from None


_NONE: frozenset[str] = frozenset()


class StoredRule(CompiledRule):
    """A rule of the compiled artifact (`CompiledRule.stored`): what every check reads of every
    rule is set at load; what it reads (paths, fields, inputs: the plan of a release other than
    the default one, the fleet's alike adapters, coverage, a rule that fires) is made from the
    artifact's constants when read, and its variants are looked up by version without a map
    of every version."""

    __slots__ = ("_derived", "_variants")

    @property  # type: ignore[override]
    def expression(self) -> str:
        return f"({self.rule.when}) && ({self.rule.condition})"

    @property  # type: ignore[override]
    def exact_params(self) -> dict[str, tuple[tuple[str, ...], ...]]:
        return dict(self._derived[1])

    @property  # type: ignore[override]
    def when_paths(self) -> set[tuple[str, ...]]:
        return set(self._derived[2])

    @property  # type: ignore[override]
    def gate_paths(self) -> set[tuple[str, ...]]:
        return set(self._derived[2] + self._derived[3])

    @property  # type: ignore[override]
    def cel_paths(self) -> frozenset[tuple[str, ...]]:
        return frozenset(self._derived[2] + self._derived[3] + self._derived[4])

    @property  # type: ignore[override]
    def paths(self) -> set[tuple[str, ...]]:
        return set(self.cel_paths).union(*self.exact_params.values())

    @property  # type: ignore[override]
    def fields(self) -> frozenset[str]:
        return frozenset(self._derived[5])

    @property  # type: ignore[override]
    def reads(self) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
        return tuple([frozenset(names) if names else _NONE for names in self._derived[7]])  # type: ignore[return-value]

    @property  # type: ignore[override]
    def _versions(self) -> dict[str, CompiledRule | None]:
        versions: dict[str, CompiledRule | None] = dict.fromkeys(self.rule.sglang_versions, self)
        versions.update(self._variants or {})
        return versions

    def for_version(self, version: str) -> "CompiledRule | None":
        if self._variants is not None:
            found = self._variants.get(version)
            if found is not None:
                return found
        return self if version in self.rule.sglang_versions else None


@lru_cache(maxsize=512)
def _pattern(text: str) -> "re.Pattern[str]":
    return re.compile(text)


@lru_cache(maxsize=1)
def _lora_paths_forms() -> tuple["re.Pattern[str]", "re.Pattern[str]"]:
    """(how adapter rules ask whether their adapter is a --lora-paths entry (and a pinned one),
    any `facts.lora_paths`)."""
    return re.compile(r"facts\.lora_paths\.exists\((\w+), \1\.name == adapter\.name(?: && \1\.pinned)?\)"), re.compile(r"facts\.lora_paths\b")


def reads_lora_paths_by_name(rules: tuple[CompiledRule, ...]) -> bool:
    """Every `facts.lora_paths` in the adapter rules' text (every string of each rule and its
    variants) is `facts.lora_paths.exists(p, p.name == adapter.name)`, optionally `&& p.pinned`:
    then an adapter's rules read the entries of its own name only, and its context may hold just
    those (engine/context.py) with every result the same: an entry of another name makes the
    macro's body false, and `exists` of false bodies adds nothing. Checked on the text, so any
    other use (or another spelling) keeps the whole list."""
    named_entry, lora_paths = _lora_paths_forms()
    for c in rules:
        for text in _strings(c.rule.model_dump(exclude={"examples"})):
            if "facts.lora_paths" in text and len(lora_paths.findall(text)) != len(named_entry.findall(text)):
                return False
    return True


def _strings(value: Any) -> Any:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)
