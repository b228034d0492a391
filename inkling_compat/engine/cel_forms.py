"""CEL's operators and functions in plain Python, for the rules' generated Python forms
(inkling_compat/data/rules_python.py, written by engine/cel_python.py).

Each helper either returns exactly what this CEL core returns for the same operands (the same
value and the same Python type once CEL's value is handed back: bool is not int, 1 is not 1.0)
or raises: `Unanswered` where it cannot be sure (then the evaluator runs the CEL program, whose
value or error is the answer: engine/python_first.py). So nothing here needs to reproduce CEL's
errors, only never return where CEL would raise. What the core does was read off it, operand
pair by operand pair (tests/test_cel_python.py compares every helper with it):

- equality is heterogeneous: values of different kinds are unequal, except int and double,
  which compare as numbers (answered where the int is exact as a double, |i| <= 2**53);
  lists and maps compare element-wise (NaN is unequal to itself, inside a list too);
- ordering is defined within a kind (int, double, string, bool) and between int and double;
  NaN has no order (an error);
- int arithmetic is 64-bit with overflow errors; `/` and `%` truncate toward zero and a zero
  divisor is an error; double `%` and mixed int/double arithmetic are errors;
- `&&` and `||` absorb errors (`false && error` is false either way round); a non-bool operand
  is an error, and so is a non-bool `?:` condition;
- `size` of a string is its length in UTF-8 bytes (not code points);
- a map handed back from CEL has no fixed key order, so a result holding a map is not
  answered, nor is what a map's order could change (`map`/`filter` over a map's keys, `join`
  of a map's text).
"""

from __future__ import annotations

from inkling_compat.engine.context import first_not_null, join_strings, python_set_repr, python_sorted, python_type_name, unknown_keys_text

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any


class Unanswered(Exception):
    """The Python form cannot say what CEL would: CEL answers."""


class Error(Exception):
    """CEL's answer is an error, for certain: a variable it always evaluates is not defined
    (`var`), as evaluated in CEL's order (`&&`/`||` absorb it, `exists`/`all` stop before
    it, as CEL's do)."""


def var(v: dict[str, Any], name: str) -> Any:
    """A variable that a check may not define (`adapter` without adapters)."""
    try:
        return v[name]
    except KeyError:
        raise Error(name) from None


_MIN, _MAX = -(1 << 63), (1 << 63) - 1
_EXACT = 1 << 53  # (ints up to this are exact as doubles: int/double comparisons agree)
_SEQ = (list, tuple)


def _i64(value: int) -> int:
    if _MIN <= value <= _MAX:
        return value
    raise Unanswered("int64 overflow")


def eq(a: Any, b: Any) -> bool:
    ta, tb = type(a), type(b)
    if ta is tb:
        if ta is list or ta is tuple:
            return _seq_eq(a, b)
        if ta is dict:
            return _map_eq(a, b)
        return a == b  # type: ignore[no-any-return]
    if ta is int and tb is float or ta is float and tb is int:
        number = a if ta is int else b
        if -_EXACT <= number <= _EXACT:
            return a == b  # type: ignore[no-any-return]
        raise Unanswered("int and double")
    if ta in _SEQ and tb in _SEQ:
        return _seq_eq(a, b)
    return False


def ne(a: Any, b: Any) -> bool:
    return not eq(a, b)


def _seq_eq(a: Any, b: Any) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if not eq(x, y):
            return False
    return True


def _map_eq(a: dict[Any, Any], b: dict[Any, Any]) -> bool:
    if len(a) != len(b):
        return False
    for key, value in a.items():
        if key not in b or not eq(value, b[key]):
            return False
    return True


def _ordered(a: Any, b: Any) -> None:
    """Raise unless CEL orders `a` and `b` as Python does."""
    ta, tb = type(a), type(b)
    if ta is tb and (ta is int or ta is str or ta is bool):
        return
    if ta is float and tb is float:
        if a == a and b == b:
            return
    elif ta is int and tb is float:
        if -_EXACT <= a <= _EXACT and b == b:
            return
    elif ta is float and tb is int:
        if -_EXACT <= b <= _EXACT and a == a:
            return
    raise Unanswered("no order")


def lt(a: Any, b: Any) -> bool:
    _ordered(a, b)
    return a < b  # type: ignore[no-any-return]


def le(a: Any, b: Any) -> bool:
    _ordered(a, b)
    return a <= b  # type: ignore[no-any-return]


def gt(a: Any, b: Any) -> bool:
    _ordered(a, b)
    return a > b  # type: ignore[no-any-return]


def ge(a: Any, b: Any) -> bool:
    _ordered(a, b)
    return a >= b  # type: ignore[no-any-return]


def add(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return _i64(a + b)
    if ta is tb and (ta is float or ta is str):
        return a + b
    if ta in _SEQ and tb in _SEQ:
        return [*a, *b]
    raise Unanswered("+")


def sub(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return _i64(a - b)
    if ta is float and tb is float:
        return a - b
    raise Unanswered("-")


def mul(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return _i64(a * b)
    if ta is float and tb is float:
        return a * b
    raise Unanswered("*")


def div(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int and b != 0:
        quotient = abs(a) // abs(b)  # (CEL truncates toward zero; Python's // floors)
        return _i64(quotient if (a < 0) == (b < 0) else -quotient)
    if ta is float and tb is float and b != 0.0:
        return a / b
    raise Unanswered("/")


def mod(a: Any, b: Any) -> Any:
    if type(a) is int and type(b) is int and b != 0 and not (a == _MIN and b == -1):  # (an overflow in CEL)
        rest = abs(a) % abs(b)  # (the sign of the dividend, as CEL's)
        return -rest if a < 0 else rest
    raise Unanswered("%")


def neg(a: Any) -> Any:
    ta = type(a)
    if ta is int:
        return _i64(-a)
    if ta is float:
        return -a
    raise Unanswered("-")


def not_(a: Any) -> bool:
    if a is True:
        return False
    if a is False:
        return True
    raise Unanswered("!")


def cond(a: Any) -> bool:
    """A `?:` condition (or a macro's predicate): a bool, else CEL's error."""
    if a is True or a is False:
        return a
    raise Unanswered("not a bool")


def in_(a: Any, b: Any) -> bool:
    tb = type(b)
    if tb is list or tb is tuple:
        for item in b:
            if eq(a, item):
                return True
        return False
    if tb is dict and type(a) is str:
        return a in b
    raise Unanswered("in")


def index(a: Any, i: Any) -> Any:
    ta = type(a)
    if ta is list or ta is tuple:
        if type(i) is int and 0 <= i < len(a):
            return a[i]
    elif ta is dict and type(i) is str:
        return a[i]  # (KeyError where it is missing: CEL's error too)
    raise Unanswered("[]")


def size(a: Any) -> int:
    ta = type(a)
    if ta is str:
        return len(a) if a.isascii() else len(a.encode("utf-8"))  # (this core's size of a string counts its UTF-8 bytes)
    if ta is list or ta is tuple or ta is dict:
        return len(a)
    raise Unanswered("size")


def has(a: Any, name: str) -> bool:
    if type(a) is dict:
        return name in a
    raise Unanswered("has")


def starts(a: Any, b: Any) -> bool:
    if type(a) is str and type(b) is str:
        return a.startswith(b)
    raise Unanswered("startsWith")


def ends(a: Any, b: Any) -> bool:
    if type(a) is str and type(b) is str:
        return a.endswith(b)
    raise Unanswered("endsWith")


def contains(a: Any, b: Any) -> bool:
    if type(a) is str and type(b) is str:
        return b in a
    raise Unanswered("contains")


def string(a: Any) -> str:
    ta = type(a)
    if ta is int:
        return str(a)
    if ta is str:
        return a  # type: ignore[no-any-return]
    raise Unanswered("string")  # (a double's text is CEL's own; a bool or null has none)


_TYPES = {type(None): "null_type", bool: "bool", int: "int", float: "double", str: "string", list: "list", tuple: "list", dict: "map"}


def type_name(a: Any) -> str:
    """CEL's `type(a)`, by the name that compares equal to it."""
    try:
        return _TYPES[type(a)]
    except KeyError:
        raise Unanswered("type") from None


_PATTERNS: dict[str, Any] = {}
_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:/ -")


def _pattern(pattern: str) -> Any:
    """(case-insensitive, anchored at the start, at the end, the words) of a pattern of the
    one form answered here, `(?i)^head(A|B|C)tail$` (each of its parts optional, the words
    of plain characters: letters, digits, `_:/ -`), else None: RE2's meaning of anything else is left to RE2."""
    found = _PATTERNS.get(pattern, False)
    if found is not False:
        return found
    rest, found = pattern, None
    fold = rest.startswith("(?i)")
    if fold:
        rest = rest[4:]
    start = rest.startswith("^")
    if start:
        rest = rest[1:]
    end = rest.endswith("$")
    if end:
        rest = rest[:-1]
    words = [rest]
    opening, closing = rest.find("("), rest.find(")")
    if 0 <= opening < closing and rest.count("(") == 1 and rest.count(")") == 1:  # `head(A|B)tail`
        head, tail = rest[:opening], rest[closing + 1 :]
        words = [head + word + tail for word in rest[opening + 1 : closing].split("|")]
    if all(word and set(word) <= _WORD for word in words):
        found = (fold, start, end, tuple(w.lower() for w in words) if fold else tuple(words))
    if len(_PATTERNS) < 256:
        _PATTERNS[pattern] = found
    return found


def matches(a: Any, pattern: Any) -> bool:
    """RE2's partial match of plain words (`_pattern`); a case-insensitive match only of ASCII
    text (RE2 folds some other letters into ASCII ones: K, the Kelvin sign, is k)."""
    if type(a) is not str or type(pattern) is not str:
        raise Unanswered("matches")
    form = _pattern(pattern)
    if form is None:
        raise Unanswered("matches")
    fold, start, end, words = form
    if fold:
        if not a.isascii():
            raise Unanswered("matches")
        a = a.lower()
    for word in words:
        if start and end:
            if a == word:
                return True
        elif start:
            if a.startswith(word):
                return True
        elif end:
            if a.endswith(word):
                return True
        elif word in a:
            return True
    return False


def exists(a: Any, predicate: Any) -> bool:
    """In order, true at the first true item (this core's `exists` stops there: an error after
    it is not reached, one before it is the answer)."""
    if type(a) is list or type(a) is tuple:
        for item in a:
            if cond(predicate(item)):
                return True
        return False
    return any(_every(a, predicate))


def all_(a: Any, predicate: Any) -> bool:
    """In order, false at the first false item (as `exists`)."""
    if type(a) is list or type(a) is tuple:
        for item in a:
            if not cond(predicate(item)):
                return False
        return True
    return all(_every(a, predicate))


def _every(a: Any, predicate: Any) -> list[bool]:
    """The predicate of each key of a map (whose order in CEL is not fixed: answered only where
    none errs)."""
    if type(a) is not dict:
        raise Unanswered("not a list or map")
    try:
        return [cond(predicate(key)) for key in a]
    except Exception:  # noqa: BLE001 - which key CEL reaches first is not known
        raise Unanswered("a map's keys") from None


def exists_one(a: Any, predicate: Any) -> bool:
    """Every item evaluated (an error anywhere is this core's answer)."""
    if type(a) is dict:
        return _every(a, predicate).count(True) == 1
    if type(a) is not list and type(a) is not tuple:
        raise Unanswered("not a list or map")
    count = 0
    for item in a:
        if cond(predicate(item)):
            count += 1
    return count == 1


def and_(*operands: Any) -> bool:
    """`a && b && ...` of thunks where an operand may be an `Error`: false if any operand is
    (whatever the others do), true if all are true; an error for certain where the others
    are true or errors for certain, else not known."""
    return _junction(operands, False, "&&")


def or_(*operands: Any) -> bool:
    """`a || b || ...` as `and_`, true for false."""
    return _junction(operands, True, "||")


def _junction(operands: tuple[Any, ...], decides: bool, name: str) -> bool:
    """`&&` (`decides` False) or `||` (True): `decides` if any operand is it, else the other
    bool if all are that, else CEL's error (certain) or not known."""
    certain = unknown = False
    for operand in operands:
        try:
            value = operand()
        except Error:
            certain = True
            continue
        except Exception:  # noqa: BLE001 - it might have been the deciding value
            unknown = True
            continue
        if value is decides:
            return decides
        if value is not (not decides):
            certain = True  # (a non-bool operand: CEL's error)
    if unknown:
        raise Unanswered(name)
    if certain:
        raise Error(name)
    return not decides


def map_(a: Any, function: Any) -> list[Any]:
    if type(a) is list or type(a) is tuple:
        return [function(item) for item in a]
    raise Unanswered("map")


def filter_(a: Any, predicate: Any) -> list[Any]:
    if type(a) is list or type(a) is tuple:
        return [item for item in a if cond(predicate(item))]
    raise Unanswered("filter")


def plain(a: Any) -> Any:
    """`a` as CEL hands a value to Python (a function's argument, a program's result): lists
    as lists; a map raises (its keys come back in no fixed order)."""
    ta = type(a)
    if ta is list or ta is tuple:
        return [plain(item) for item in a]
    if ta is dict:
        raise Unanswered("a map")
    return a


def _with_maps(a: Any) -> Any:
    """`a` as CEL hands it to a function that reads maps by key only."""
    ta = type(a)
    if ta is list or ta is tuple:
        return [_with_maps(item) for item in a]
    if ta is dict:
        return {key: _with_maps(value) for key, value in a.items()}
    return a


# The functions engine/context.py `cel_context` adds, called as CEL calls them.
def pytype(a: Any) -> str:
    return python_type_name([] if type(a) is tuple else {} if type(a) is dict else a)


def pysorted(a: Any) -> Any:
    return plain(python_sorted(plain(a)))


def join(a: Any, separator: Any) -> str:
    return join_strings(plain(a), plain(separator))


def pyset(a: Any) -> str:
    return python_set_repr(plain(a))


def first(*values: Any) -> Any:
    return first_not_null(*(_with_maps(v) for v in values))


def unknown_keys(a: Any) -> str:
    return unknown_keys_text(_with_maps(a))
