"""The `when` guards of one scope evaluated together: each guard split at its top-level `&&`,
each distinct conjunct run at most once per check, a guard stopping at its first false one.

The shipped rules' 66 guards are 179 conjuncts but only 66 distinct ones (`facts.lora_enabled`
opens 31 of them, `adapter.form == "peft"` 17), so most guards are decided by a conjunct
already evaluated for another. CEL's `&&` is commutative: any false operand makes it false,
errors included; all true makes it true. Anything else (a conjunct that errors or is not a
bool) is left to the guard's own program, so a guard's value is exactly what it evaluates to.
"""

from __future__ import annotations

from typing import Any, Callable

_UNSET = object()


def conjuncts(expression: str) -> list[str] | None:
    """`a && b && c` -> ["a", "b", "c"]. None where splitting could change the meaning: a
    top-level `||` or `?` (both bind looser than `&&`; `?` also covers `.?` selection), a
    backslash (escapes, raw strings) or `//` (a comment), unbalanced brackets or quotes."""
    if "\\" in expression or "//" in expression:
        return None
    parts: list[str] = []
    depth, start, quote, i = 0, 0, "", 0
    while i < len(expression):
        ch = expression[i]
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                return None
        elif depth == 0:
            if ch == "?" or expression.startswith("||", i):
                return None
            if expression.startswith("&&", i):
                parts.append(expression[start:i].strip())
                start = i + 2
                i += 1
        i += 1
    if quote or depth:
        return None
    parts.append(expression[start:].strip())
    return parts if all(parts) else None


class Guards:
    """Distinct guard texts -> their values in one context (True, False, or None: neither)."""

    __slots__ = ("programs", "parts", "conjunct_programs")

    def __init__(self, programs: list[Any], compile: Callable[[str], Any]):
        self.programs = programs  # each guard's own program (`when` compiled)
        distinct: dict[str, int] = {}
        compiled: list[Any] = []
        self.parts: list[tuple[int, ...] | None] = []
        for program in programs:
            self.parts.append(self._split(program.source, distinct, compiled, compile))
        self.conjunct_programs = compiled

    @staticmethod
    def _split(source: str, distinct: dict[str, int], compiled: list[Any], compile: Callable[[str], Any]) -> tuple[int, ...] | None:
        """The guard's conjuncts as indices into `compiled` (new ones appended), or None."""
        pieces = conjuncts(source)
        if pieces is None:
            return None
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
