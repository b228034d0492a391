"""The `when` guards of one scope evaluated together: each guard split at its top-level `&&`
(its parse tree: engine/cel_tree.py), each distinct conjunct run at most once per check, a
guard stopping at its first false one.

Most guards share their first conjuncts (`facts.lora_enabled`, `adapter.form == "peft"`), so
most are decided by a conjunct already evaluated for another. CEL's `&&` is commutative: any false operand makes it false,
errors included; all true makes it true; else (no operand false, one that errors or is not a
bool) it is an error, which a guard reads as neither (None): a guard after an operand that
errors reads on for a false one (a rule set's adapter guards in a check without an adapter,
whose `adapter.*` operands all error, are decided without compiling each whole guard). A guard
whose operands did not compile is left to its own program, so a guard's value is exactly what
it evaluates to (tests/test_evaluators.py: against each rule's own program). The fast
evaluator's programs run their generated Python forms first (engine/python_first.py): an operand
is "compiled" into such a program, and CEL compiles it only where its form cannot answer.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Callable

_UNSET = object()


class Guards:
    """Distinct guard texts -> their values in one context (True, False, or None: neither).

    Programs are compiled when first run: a guard's own program only where its operands do
    not decide it, an operand only when a guard reaches it (most guards stop at an operand
    another guard already found false)."""

    __slots__ = ("programs", "makers", "parts", "conjunct_programs", "texts", "compile")

    def __init__(self, programs: list[Any], compile: Callable[[str], Any], conjuncts: "list[tuple[str, ...] | None] | None" = None):
        """`programs`: each guard's own program (`when` compiled), or a function that returns
        it; `conjuncts`: each guard's `&&` operands, as the rule set read them (CompiledRule
        `when_conjuncts`: each compiles alone, or None), compiled when first run; None: read
        here from each program's text (and compiled now)."""
        self.makers = [None if hasattr(p, "execute") else p for p in programs]
        self.programs = [p if hasattr(p, "execute") else None for p in programs]
        self.compile = compile
        distinct: dict[str, int] = {}
        self.texts: list[str] = []
        self.conjunct_programs: list[Any] = []
        self.parts: list[tuple[int, ...] | None] = []
        for index, program in enumerate(programs):
            if conjuncts is not None:
                pieces = conjuncts[index]
                self.parts.append(None if pieces is None else self._split(pieces, distinct, None))
            else:
                pieces = self._pieces(program.source)
                self.parts.append(None if pieces is None else self._split(pieces, distinct, compile))

    @staticmethod
    def _pieces(source: str) -> tuple[str, ...] | None:
        from inkling_compat.engine import cel_tree  # (a rule set's conjuncts are known: only other guards are parsed here)

        try:
            return cel_tree.analyse(source).conjuncts
        except ValueError:  # (not parsed: the whole guard runs)
            return None

    def _split(self, pieces: tuple[str, ...], distinct: dict[str, int], compile: "Callable[[str], Any] | None") -> tuple[int, ...] | None:
        """The guard's conjuncts as indices into `conjunct_programs` (new ones appended: compiled
        now with `compile`, else when first run), or None."""
        indices = []
        for piece in pieces:
            if piece not in distinct:
                program = None
                if compile is not None:
                    try:
                        program = compile(piece)
                    except Exception:  # noqa: BLE001 - not a conjunct after all: the whole guard runs
                        return None
                self.conjunct_programs.append(program)
                self.texts.append(piece)
                distinct[piece] = len(self.texts) - 1
            indices.append(distinct[piece])
        return tuple(indices)

    def _program(self, index: int) -> Any:
        program = self.programs[index]
        if program is None:
            program = self.programs[index] = self.makers[index]()
        return program

    def values(self, ctx: Any) -> list[Any]:
        """Each guard's value in `ctx`, in the order of `programs`."""
        memo: list[Any] = [_UNSET] * len(self.conjunct_programs)
        out: list[Any] = []
        for slot, parts in enumerate(self.parts):
            value: Any = True
            if parts is not None:
                erred = False  # (an operand that errors or is not a bool: False if a later one is, else an error)
                for index in parts:
                    item = memo[index]
                    if item is _UNSET:
                        conjunct = self.conjunct_programs[index]
                        if conjunct is None:
                            try:
                                conjunct = self.conjunct_programs[index] = self.compile(self.texts[index])
                            except Exception:  # noqa: BLE001 - (the rule set found it compiles): the guard's own program decides
                                value = None
                                break
                        try:
                            item = conjunct.execute(ctx)
                        except Exception:  # noqa: BLE001 - an error: the guard is false if another operand is, else an error
                            item = None
                        memo[index] = item
                    if item is False:
                        value = False
                        break
                    if item is not True:
                        erred = True
                else:
                    if erred:
                        out.append(None)
                        continue
            else:
                value = None
            if value is None:  # not decided by its conjuncts: the guard's own value
                try:
                    value = self._program(slot).execute(ctx)
                except Exception:  # noqa: BLE001 - unknown (the rules' programs say what fails)
                    value = None
                if value is not True and value is not False:
                    value = None
            out.append(value)
        return out
