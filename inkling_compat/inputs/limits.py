"""Size limits applied to input documents before any parser recurses or converts a number.

Python's json module, PyYAML's constructor, pydantic and the CEL conversion all recurse per
nesting level, and `int()` refuses more than 4,300 digits (and is quadratic below that), so
a hostile document could end a check with RecursionError or ValueError: a defect (exit 3)
instead of unusable input (exit 2). Every input document is therefore measured first:

* nesting: at most `MAX_DEPTH` (64) levels of lists/objects. Real configs use fewer than 10
  (a safetensors header 3); the recursive readers all manage several hundred.
* numbers: an integer literal of at most `MAX_NUMBER_DIGITS` (100) digits. Every size, count
  or id an input holds fits 20 digits (u64); 100 digits convert in microseconds.
* text: strings must be Unicode that UTF-8 can hold. JSON's `\\ud800` escape (a lone UTF-16
  surrogate) is accepted by `json.loads` but fails every later encoding (the CEL context,
  JSON output); libyaml already refuses it.

JSON is measured on its raw bytes with bytes.translate/replace/find (regular expressions only
where strings hold escapes or brackets; no recursion, no number conversion): about a third of
what json.loads itself takes. YAML is measured on libyaml's
node graph before anything is constructed (`inputs/loading.py`). Data that arrives as Python
objects (API callers' dicts) is measured by `check_data`, iteratively.

Each check raises `LimitExceeded(path, reason, line)`: the field path ("sink.layers[0]") and,
for text, the line; the callers turn it into their own error (an `InputError` for the
server/model/platform/manifest files, an adapter's unreadable file).
"""

from __future__ import annotations

import functools
import re

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 64
MAX_NUMBER_DIGITS = 100
MAX_INT_BITS = 333  # 10**100 < 2**333: a Python int of more than 100 digits has more bits
# The values of one document (keys count), aliases expanded, and the YAML aliases it may use.
MAX_EXPANDED_NODES = 100_000
MAX_YAML_ALIASES = 256


# A JSON string token (escapes included); quotes and backslashes are ASCII, so this works on
# UTF-8 bytes as it does on text.
@functools.cache
def _string() -> re.Pattern[bytes]:
    return re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)


_ALL = bytes(range(256))
_NOT_BRACKET = bytes(b for b in _ALL if b not in b"[]{}")
_DIGIT_TO_9 = bytes.maketrans(b"0123456789", b"9999999999")
_NOT_KEPT = bytes(b for b in _ALL if b not in b'"[]{}0123456789')
_DIGIT_RUN = b"9" * (MAX_NUMBER_DIGITS + 1)


# The slow path's tokens: strings (skipped), brackets, and an integer literal of more than 100
# digits: a digit run neither inside a fraction or exponent nor followed by one.
@functools.cache
def _token() -> re.Pattern[bytes]:
    return re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]|(?<![\d.eE+\-])-?\d{%d,}(?![\d.eE])' % (MAX_NUMBER_DIGITS + 1), re.S)


@functools.cache
def _surrogate_escape() -> re.Pattern[bytes]:
    return re.compile(rb"\\u[dD][89a-fA-F]")


# sglang's get_layer_id (layers/utils/common.py) is int() of the first `layers\.(\d+)\.` match
# of a weight name: beyond Python's default 4,300-digit limit sglang raises ValueError there,
# and so would the checker's own replay.
MAX_LAYER_DIGITS = 4300


@functools.cache
def _layer() -> re.Pattern[str]:
    return re.compile(r"layers\.(\d+)\.")


@functools.cache
def _long_layer() -> re.Pattern[bytes]:
    return re.compile(rb"layers\.\d{%d}" % (MAX_LAYER_DIGITS + 1))


def may_have_long_layer_ids(raw: bytes) -> bool:
    """A fast test on a document's bytes: could a name in it hold a too-long layer number?"""
    return _long_layer().search(raw) is not None


def long_layer_reason(name: str) -> str | None:
    """Why sglang cannot read the layer number of weight `name` (too many digits), or None."""
    if len(name) <= MAX_LAYER_DIGITS:
        return None
    match = _layer().search(name)
    if match is None or len(match.group(1)) <= MAX_LAYER_DIGITS:
        return None
    shown = name if len(name) <= 80 else name[:40] + "..." + name[-30:]
    return (
        f"tensor {shown!r}: a layer number of {len(match.group(1))} digits; sglang's get_layer_id "
        f"(int()) raises ValueError beyond Python's {MAX_LAYER_DIGITS}-digit limit"
    )


class LimitExceeded(ValueError):
    """A document beyond one of the limits: `path` is the field path ("sink.layers[0]", or
    "(root)"), `reason` says which limit, with the line where the text has one."""

    def __init__(self, path: str, reason: str, line: int | None = None):
        path = path or "(root)"
        self.path = path if len(path) <= 80 else path[:77] + "..."  # a deep path: its start
        self.reason = reason if line is None else f"{reason} (line {line})"
        super().__init__(f"{self.path}: {self.reason}")


def too_deep_reason() -> str:
    return f"nested too deeply (more than {MAX_DEPTH} levels)"


def long_number_reason(digits: int) -> str:
    return f"a number of {digits} digits (more than {MAX_NUMBER_DIGITS})"


class JsonScan:
    """What `scan_json` measured: `objects` is the number of `{` outside strings (a
    safetensors header has one per tensor, plus the root and `__metadata__`);
    `maybe_surrogates` says whether a `\\uD8xx`-`\\uDFxx` escape occurs (check the parsed
    strings with `check_strings`); `long_digit_runs` whether more than MAX_NUMBER_DIGITS
    digits may stand together anywhere, strings included (only then can a name hold a
    too-long layer number: `may_have_long_layer_ids`)."""

    __slots__ = ("objects", "maybe_surrogates", "long_digit_runs")

    def __init__(self, objects: int, maybe_surrogates: bool, long_digit_runs: bool):
        self.objects = objects
        self.maybe_surrogates = maybe_surrogates
        self.long_digit_runs = long_digit_runs


def scan_json(raw: bytes) -> JsonScan:
    """Measure JSON bytes before parsing them: raises `LimitExceeded` (path, line) for nesting
    deeper than MAX_DEPTH or an integer of more than MAX_NUMBER_DIGITS digits.

    Fast path, all in C (bytes.translate/replace/find; ~10 ms per 15 MB, a third of what
    json.loads takes): one pass keeps only quotes, brackets and digits (as "9"); a run of
    101 "9"s there is a candidate long number (digits that other characters separated may
    join up: then the exact walk below decides). With no backslash in the text every string
    is then a quote pair, empty unless the string holds a bracket (then the regex path
    removes strings exactly); strip the pairs, then remove the empty bracket pairs one level
    per pass (a document of depth D is gone after D passes). Only a document that fails (too
    deep, a long digit run, or brackets that do not pair up: invalid JSON, left to the
    parser's own message) is walked token by token to find the path and line."""
    kept = raw.translate(_DIGIT_TO_9, _NOT_KEPT)
    long_digits = kept.find(_DIGIT_RUN) >= 0
    escapes = b"\\" in raw
    structure = None
    if not escapes:
        structure = kept.translate(None, b"9").replace(b'""', b"")
        if b'"' in structure:
            structure = None  # some string holds a bracket (or quotes do not pair up)
    if structure is None:
        structure = _string().sub(b"", raw).translate(None, _NOT_BRACKET)
    objects = structure.count(b"{")
    for _ in range(MAX_DEPTH):
        if not structure:
            break
        # One level per pass: both kinds of pair marked first, then the marks removed.
        shorter = structure.replace(b"[]", b"..").replace(b"{}", b"..").translate(None, b".")
        if len(shorter) == len(structure):
            break  # unpaired: invalid JSON, or deeper than that; the walk below tells
        structure = shorter
    if structure or long_digits:
        _locate(raw)  # raises, unless the brackets only do not pair up or the digits are text
    return JsonScan(objects, escapes and _surrogate_escape().search(raw) is not None, long_digits)


def json_values(raw: bytes) -> int:
    """The values (keys count) of JSON bytes that follow a comma or precede a colon, outside
    strings, plus one: each value but a container's first follows a comma, each key precedes a
    colon. A container's first value is not counted, so nesting without commas is left to the
    depth limit (scan_json: "nested too deeply", with its line) and `check_data` counts exactly
    after parsing. All in C (count, and the string regex only when the quick bound is over
    `MAX_JSON_VALUES`)."""
    quick = raw.count(b",") + raw.count(b":") + 1
    if quick <= MAX_JSON_VALUES:
        return quick
    bare = _string().sub(b'""', raw)
    return bare.count(b",") + bare.count(b":") + 1


MAX_JSON_VALUES = MAX_EXPANDED_NODES  # the quick bound's threshold


def _locate(raw: bytes) -> None:
    """The slow path of scan_json: the first place a limit is exceeded, with its field path
    and line; returns if there is none (the brackets merely do not pair up, or the long digit
    run is inside a string: the parser decides)."""
    # One frame per open container: [is_object, key or index, expecting a key].
    frames: list[list[Any]] = []
    for match in _token().finditer(raw):
        token = match.group()
        first = token[:1]
        top = frames[-1] if frames else None
        if first == b'"':
            if top is not None and top[0] and top[2]:
                top[1] = _text(token[1:-1])
            continue
        if first == b":":
            if top is not None and top[0]:
                top[2] = False
            continue
        if first == b",":
            if top is not None:
                if top[0]:
                    top[2] = True
                else:
                    top[1] += 1
            continue
        if first in b"[{":
            if len(frames) >= MAX_DEPTH:
                raise LimitExceeded(_path(frames), too_deep_reason(), _line(raw, match.start()))
            frames.append([True, "", True] if first == b"{" else [False, 0, False])
        elif first in b"]}":
            if frames:
                frames.pop()
        else:
            digits = len(token) - token.startswith(b"-")
            raise LimitExceeded(_path(frames), long_number_reason(digits), _line(raw, match.start()))


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _path(frames: list[list[Any]]) -> str:
    out = ""
    for is_object, key, _ in frames:
        out += (f".{key}" if out else str(key)) if is_object else f"[{key}]"
    return out or "(root)"


def _line(raw: bytes, position: int) -> int:
    return raw.count(b"\n", 0, position) + 1


def bad_text(value: str) -> bool:
    """True for a str UTF-8 cannot encode (a lone surrogate)."""
    if value.isascii():
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def surrogate_reason(value: str) -> str:
    for char in value:
        if 0xD800 <= ord(char) <= 0xDFFF:
            return f"text with a lone UTF-16 surrogate (\\u{ord(char):04x}), not valid Unicode"
    return "text that is not valid Unicode"


def check_data(data: Any, *, count_limit: int = 1_000_000) -> int:
    """Measure parsed or caller-given data (dicts, lists, scalars), iteratively: raises
    `LimitExceeded` with the field path for nesting deeper than MAX_DEPTH, an int of more than
    MAX_NUMBER_DIGITS digits, a str (value or key) with a lone surrogate, or more than
    `count_limit` values (keys count). Returns the number of values. Shared containers are
    counted again wherever they occur, so a container holding itself ends as too deep or too
    many values, never as a loop."""
    count = 0
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        item, path, depth = stack.pop()
        count += 1
        if count > count_limit:
            raise LimitExceeded("(root)", f"more than {count_limit} values")
        kind = type(item)
        if kind is str:
            if bad_text(item):
                raise LimitExceeded(path or "(root)", surrogate_reason(item))
        elif kind is int:
            if item.bit_length() > MAX_INT_BITS:
                raise LimitExceeded(path or "(root)", f"an integer of more than {MAX_NUMBER_DIGITS} digits")
        elif isinstance(item, dict):
            if depth >= MAX_DEPTH:
                raise LimitExceeded(path or "(root)", too_deep_reason())
            for key, value in item.items():
                if type(key) is str and bad_text(key):
                    raise LimitExceeded(f"{path}.{key!r}" if path else repr(key), surrogate_reason(key))
                count += 1
                stack.append((value, f"{path}.{key}" if path else str(key), depth + 1))
        elif isinstance(item, (list, tuple)):
            if depth >= MAX_DEPTH:
                raise LimitExceeded(path or "(root)", too_deep_reason())
            stack.extend((value, f"{path}[{index}]", depth + 1) for index, value in enumerate(item))
    return count


def check_strings(data: Any) -> None:
    """Only the text part of `check_data` (after `scan_json` found a surrogate escape): the
    first key or str value with a lone surrogate raises `LimitExceeded` with its path."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        item, path = stack.pop()
        if type(item) is str:
            if bad_text(item):
                raise LimitExceeded(path or "(root)", surrogate_reason(item))
        elif isinstance(item, dict):
            for key, value in item.items():
                if type(key) is str and bad_text(key):
                    raise LimitExceeded(f"{path}.{key!r}" if path else repr(key), surrogate_reason(key))
                stack.append((value, f"{path}.{key}" if path else str(key)))
        elif isinstance(item, list):
            stack.extend((value, f"{path}[{index}]") for index, value in enumerate(item))


def read_bounded(path: Any, cap: int, field: str = "(file)") -> bytes:
    """The bytes of the regular file `path`, at most `cap`; `InputError` naming the file
    otherwise (a FIFO, socket or device is never read: opened with O_NONBLOCK and refused once
    fstat says what it is; a file growing past the cap while read is refused too)."""
    import os
    import stat

    from inkling_compat.errors import InputError

    name = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise InputError(name, field, "no such file") from None
    except OSError as exc:
        raise InputError(name, field, f"cannot read: {exc.strerror}") from None
    except ValueError:  # a NUL in the path
        raise InputError(name, field, "the path holds a NUL character: no such file") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            what = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file (a FIFO, socket or device)"
            raise InputError(name, field, f"is {what}: never read")
        if info.st_size > cap:
            raise InputError(name, field, f"{info.st_size} bytes is more than the {cap}-byte limit")
        chunks, left = [], info.st_size + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        raw = b"".join(chunks)
        if len(raw) > info.st_size:
            raise InputError(name, field, "grew while it was read")
        return raw
    except OSError as exc:
        raise InputError(name, field, f"cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)
