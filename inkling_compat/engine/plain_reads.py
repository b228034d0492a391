"""The plainest CEL forms a rule writes, read from the values a context was built from instead
of compiling and running a CEL program: a variable path (`facts.lora_enabled`), its negation
(`!config.lora_strict_loading`), and a path compared with a literal (`config.x != null`,
`adapter.form == "peft"`, `config.max_lora_rank == 0`). About half of the guard operands and
conditions a check runs are such forms, and compiling and running each costs tens of
microseconds where reading the value costs one.

A form is read only where its value is certain: the path leads through maps (string keys) to
a value, and

- a path alone, or negated, is a bool;
- compared with `null`: the value is null, a bool, an int, a double, a string, a list or a map
  (CEL: only null equals null);
- compared with a bool, an int or a string: the value is null or of the literal's type, or a
  bool, a string, a list or a map (CEL: values of different types are not equal; an int and a
  double are left to CEL, which may compare them as numbers).

Anything else (a missing key, a null or a list on the way, a bare path that is not a bool) is
`UNDECIDED`: the program runs and says what CEL says, errors included.
tests/test_plain_reads.py compares every form on values of every type with CEL's own result,
tests/test_evaluators.py and tests/test_rule_examples.py the engine with the reference
evaluator, which compiles every program.
"""

from __future__ import annotations

import functools
from typing import Any

UNDECIDED: Any = object()

# CEL's reserved words: never a variable or field name in a form read here.
_RESERVED = frozenset({
    "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function", "if", "import", "let", "loop",
    "package", "namespace", "return", "var", "void", "while",
})  # fmt: skip
_INT64 = (-(2**63) + 1, 2**63 - 1)  # (-2**63 is written as the negation of a literal out of range)
# Types whose values CEL holds as Python holds them, compared with another type: never equal.
_OTHER = (bool, str, list, dict)


@functools.lru_cache(maxsize=1)
def _grammar() -> Any:
    import re

    ident = r"[A-Za-z_][A-Za-z0-9_]*"
    literal = r'null|true|false|"[^"\\\r\n]*"|-?(?:0|[1-9][0-9]{0,18})'
    return re.compile(rf"\s*(!\s*)?({ident}(?:\s*\.\s*{ident})+)\s*(?:(==|!=)\s*({literal})\s*)?")


class Form:
    """One plain form: its path, whether it is negated, and the comparison (`==` / `!=` with a
    literal: None for null, a bool, an int or a string) if any."""

    __slots__ = ("path", "negated", "op", "literal")

    def __init__(self, path: tuple[str, ...], negated: bool, op: str | None, literal: Any):
        self.path, self.negated, self.op, self.literal = path, negated, op, literal

    def read(self, variables: dict[str, Any]) -> Any:
        """The form's value on `variables` (True or False), or UNDECIDED."""
        value: Any = variables
        for segment in self.path:
            if type(value) is not dict or segment not in value:
                return UNDECIDED
            value = value[segment]
        if self.op is None:
            if type(value) is not bool:
                return UNDECIDED
            return value is not self.negated
        literal = self.literal
        if value is None or literal is None:
            if value is not None and type(value) not in _OTHER and type(value) not in (int, float):
                return UNDECIDED
            equal = value is literal
        elif type(value) is type(literal):
            equal = value == literal
        elif type(value) in _OTHER:
            equal = False
        else:  # (an int or a double against another literal: CEL's numeric comparison decides)
            return UNDECIDED
        return equal if self.op == "==" else not equal


@functools.lru_cache(maxsize=4096)
def form(text: str) -> Form | None:
    """`text` as a plain form, or None (not one: its program runs)."""
    found = _grammar().fullmatch(text)
    if found is None:
        return None
    negated, path_text, op, literal_text = found.groups()
    if negated and op:  # (`!a == b` is `(!a) == b`)
        return None
    path = tuple(segment.strip() for segment in path_text.split("."))
    if any(segment in _RESERVED for segment in path):
        return None
    literal: Any = None
    if op is not None:
        if literal_text == "null":
            literal = None
        elif literal_text in ("true", "false"):
            literal = literal_text == "true"
        elif literal_text.startswith('"'):
            literal = literal_text[1:-1]
        else:
            literal = int(literal_text)
            if not _INT64[0] <= literal <= _INT64[1]:
                return None
    return Form(path, bool(negated), op, literal)
