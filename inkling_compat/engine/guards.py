"""The `when` guards of one scope evaluated together: each guard split at its top-level `&&`
(its parse tree: engine/cel_tree.py), each distinct conjunct run at most once per check, a
guard stopping at its first false one.

Most guards share their first conjuncts (`facts.lora_enabled`, `adapter.form == "peft"`), so
most are decided by a conjunct already evaluated for another. CEL's `&&` is commutative: any false operand makes it false,
errors included; all true makes it true. Anything else (a conjunct that errors or is not a
bool) is left to the guard's own program, so a guard's value is exactly what it evaluates to.
"""

from __future__ import annotations

from typing import Any, Callable

from inkling_compat.engine import cel_tree

_UNSET = object()


class Guards:
    """Distinct guard texts -> their values in one context (True, False, or None: neither)."""

    __slots__ = ("programs", "parts", "conjunct_programs")

    def __init__(self, programs: list[Any], compile: Callable[[str], Any], conjuncts: "list[tuple[str, ...]] | None" = None):
        """`conjuncts`: each guard's `&&` operands, as the rule set read them (CompiledRule
        `when_conjuncts`); None: read here from each program's text."""
        self.programs = programs  # each guard's own program (`when` compiled)
        distinct: dict[str, int] = {}
        compiled: list[Any] = []
        self.parts: list[tuple[int, ...] | None] = []
        for index, program in enumerate(programs):
            pieces = conjuncts[index] if conjuncts is not None else self._pieces(program.source)
            self.parts.append(None if pieces is None else self._split(pieces, distinct, compiled, compile))
        self.conjunct_programs = compiled

    @staticmethod
    def _pieces(source: str) -> tuple[str, ...] | None:
        try:
            return cel_tree.analyse(source).conjuncts
        except ValueError:  # (not parsed: the whole guard runs)
            return None

    @staticmethod
    def _split(pieces: tuple[str, ...], distinct: dict[str, int], compiled: list[Any], compile: Callable[[str], Any]) -> tuple[int, ...] | None:
        """The guard's conjuncts as indices into `compiled` (new ones appended), or None."""
        indices = []
        for piece in pieces:
            if piece not in distinct:
                try:
                    program = compile(piece)
                except Exception:  # noqa: BLE001 - not a conjunct after all: the whole guard runs
                    return None
                compiled.append(program)
                distinct[piece] = len(compiled) - 1
            indices.append(distinct[piece])
        return tuple(indices)

    def values(self, ctx: Any) -> list[Any]:
        """Each guard's value in `ctx`, in the order of `programs`."""
        memo: list[Any] = [_UNSET] * len(self.conjunct_programs)
        out: list[Any] = []
        for program, parts in zip(self.programs, self.parts):
            value: Any = True
            if parts is not None:
                for index in parts:
                    item = memo[index]
                    if item is _UNSET:
                        try:
                            item = self.conjunct_programs[index].execute(ctx)
                        except Exception:  # noqa: BLE001 - the guard's own program says what it is
                            item = None
                        memo[index] = item
                    if item is not True:
                        value = False if item is False else None
                        break
            else:
                value = None
            if value is None:  # not decided by its conjuncts: the guard's own value
                try:
                    value = program.execute(ctx)
                except Exception:  # noqa: BLE001 - unknown (the rules' programs say what fails)
                    value = None
                if value is not True and value is not False:
                    value = None
            out.append(value)
        return out
