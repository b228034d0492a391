"""`inkling-compat explain`: which rules an error text from sglang is, most specific first.

The text may be one message, a log line, a whole traceback or a log excerpt. It is cut into
records (a log record, or an exception line with the lines wrapped under it; traceback frames
are skipped), and each record is matched against every rule's `message_pattern`, tolerating
log prefixes, a message wrapped over lines and case. Each rule is explained once, at the first
record it is the best match of.

Most specific first: by the number of the pattern's literal characters that the match used
(a pattern that is mostly `.*`, or whose alternative that matched is short, says less), then
by the shorter pattern (of two patterns matching the same literal text, the one with fewer
alternatives admits fewer texts).
"""

from __future__ import annotations

import functools
import re
import textwrap
from dataclasses import dataclass
from typing import Any

try:  # Python 3.11+: the regex parser the `re` module uses itself
    from re import _constants as _sre_c, _parser as _sre_parse
except ImportError:  # pragma: no cover - older layouts
    import sre_constants as _sre_c  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]

from inkling_compat.errors import InputError


def _linear(pattern: str, ignore_case: bool = False) -> Any:
    """`pattern` compiled by RE2 (google-re2): its search time is linear in the text whatever
    the pattern, where Python's backtracking `re` is quadratic or worse for `.*x.*y` on a
    crafted line (a pasted log is anyone's text). Python's `re` only where RE2 lacks a construct
    the pattern uses (every shipped pattern compiles under RE2: tests/hostile/test_explain_linear.py)."""
    try:
        import re2
    except ImportError:  # pragma: no cover - google-re2 is a dependency
        return re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.log_errors = False
    options.max_mem = 64 << 20  # the prefilter's alternation of every literal is large
    try:
        return re2.compile(pattern, options)
    except re2.error:
        return re.compile(pattern, re.IGNORECASE if ignore_case else 0)

# A log record's prefix: timestamps, bracketed fields ("[2026-01-01 12:00:00 TP0]"), a Ray
# actor's "(Scheduler pid=12)", a level word ("ERROR", "WARNING:") and separators.
_TIMESTAMP = r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
_LEVEL = r"(?:ERROR|WARNING|WARN|INFO|DEBUG|CRITICAL|FATAL)\b"
# Bracketed and parenthesized fields count only with a time, a rank or a pid in them: a
# wrapped message may go on with "[slots, ...]" or "(expected 4, got 3)".
_BRACKETED = r"\[[^\]\n]*(?:\d{2}:\d{2}|\b[TDPE]P\d+)[^\]\n]*\]|\([^)\n]*\bpid=\d+[^)\n]*\)"
_LOG_PREFIX = _linear(rf"^\s*(?:(?:{_BRACKETED}|{_TIMESTAMP}|{_LEVEL})[\s:|\-]*)+")
# The patterns below are Python's `re` (Unicode `\w` and `\b`, as the rules' texts are read):
# each is anchored or starts at a word boundary and backtracks at most over one word, linear in
# the line; the log prefix above (its bracketed field scans twice for a time) is RE2's.
# An exception line: "ValueError: ...", "torch.OutOfMemoryError: ...", "SystemExit: 2".
_EXCEPTION_LINE = re.compile(r"^\s*(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Warning|Interrupt)(?::|$)")
# Everything up to the last exception class (or "Traceback ...:") of a line.
# Found in two linear searches (`strip_exception_prefix`): the one pattern
# `^.*?\b(?:...|Traceback[^:]*):` scans to the end of the line from each "Traceback" when no
# colon follows, quadratic in a line of them.
_EXCEPTION_CLASS = re.compile(r"\b[A-Z]\w*(?:Error|Exception|Exit):\s?")
_TRACEBACK = re.compile(r"\bTraceback")
_SPACE = re.compile(r"\s")
_FRAME = re.compile(r'^\s*File "[^"]*", line \d+')
_CHAINING = re.compile(r"^\s*(?:Traceback \(most recent call last\)|During handling of the above exception|The above exception was the direct cause)")
_SPACES = re.compile(r"\s+")
_SQUEEZE = re.compile(r"\s\s|[^\S ]")  # a whitespace run that is not one space

MAX_TEXT_BYTES = 8 * 1024 * 1024  # a log excerpt, not a whole log
# A message wrapped over more lines than this is not one message: the record ends and the
# next line starts another. Without the cap, lines without a prefix (one warning repeated on
# every line of a log) join into one record whose joined text every pattern searches, which
# grows with the square of the lines; sglang's longest message wraps over far fewer lines.
MAX_WRAPPED_LINES = 16


@dataclass(frozen=True)
class Match:
    """One rule whose pattern matches a record: `score` literal characters matched."""

    rule: Any  # engine.rule_schema.Rule
    score: int


@dataclass(frozen=True)
class Finding:
    """One error found in the text: where (1-based line), its text, its matches best first."""

    line: int
    text: str
    matches: tuple[Match, ...]


# --- records -------------------------------------------------------------------------------


@dataclass
class _Record:
    line: int
    lines: list[str]
    frame: bool  # a traceback frame ('File "...", line N' and its source line): not an error line


def records(text: str) -> list[tuple[int, list[str]]]:
    """The text's records, as (first line number, its lines without log prefixes). A record
    starts at a line with a log prefix, an exception line, a traceback frame or chaining
    line, or after a blank line; other lines continue it (a wrapped message)."""
    out: list[_Record] = []
    current: _Record | None = None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (bytes that were not UTF-8): RE2 reads UTF-8 only
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            current = None
            continue
        prefix = _LOG_PREFIX.match(raw)
        line = raw[prefix.end():] if prefix else raw
        starts = (
            current is None
            or prefix is not None
            or _EXCEPTION_LINE.match(line) is not None
            or _FRAME.match(line) is not None
            or _CHAINING.match(line) is not None
            or len(current.lines) >= MAX_WRAPPED_LINES
        )
        if starts:
            current = _Record(number, [line], frame=_FRAME.match(line) is not None)
            out.append(current)
        else:
            current.lines.append(line)
    return [(r.line, r.lines) for r in out if not r.frame]


def candidates(lines: list[str]) -> list[str]:
    """The texts one record is matched as: the lines joined by a space (a wrap at a space)
    and by nothing (a hard wrap inside a word), each line alone, and each of these without
    what precedes its exception class; each as given (sglang's messages have double and
    trailing spaces) and with whitespace runs made one space."""
    stripped = [line.strip() for line in lines]
    texts = [" ".join(lines), " ".join(stripped)]
    if len(lines) > 1:
        texts.append("".join(stripped))
        texts.extend(lines)
    out: list[str] = []
    for text in texts:
        squeezed = _SPACES.sub(" ", text).strip() if _SQUEEZE.search(text) else text.strip()
        for spaced in (text, squeezed):
            for variant in (spaced, strip_exception_prefix(spaced)):
                if variant.strip() and variant not in out:
                    out.append(variant)
    return out


def strip_exception_prefix(text: str) -> str:
    """The text after its first exception class ("...ValueError: ") or "Traceback ...:" (the
    earliest of the two; the class wins where both start), or the text as it is."""
    found = _EXCEPTION_CLASS.search(text)
    last_colon = text.rfind(":")
    # "Traceback" matches with the first colon after it, so only one before the last colon can
    trace = _TRACEBACK.search(text, 0, last_colon) if last_colon > 0 else None
    if trace is not None and (found is None or trace.start() < found.start()):
        end = text.index(":", trace.end()) + 1
        if _SPACE.match(text, end):
            end += 1
        return text[end:]
    return text[found.end():] if found is not None else text


# --- specificity -----------------------------------------------------------------------------


class _Unsupported(Exception):
    pass


_AT = {
    _sre_c.AT_BEGINNING: "^",
    _sre_c.AT_BEGINNING_STRING: r"\A",
    _sre_c.AT_END: "$",
    _sre_c.AT_END_STRING: r"\Z",
    _sre_c.AT_BOUNDARY: r"\b",
    _sre_c.AT_NON_BOUNDARY: r"\B",
}
_CATEGORY = {
    _sre_c.CATEGORY_DIGIT: r"\d",
    _sre_c.CATEGORY_NOT_DIGIT: r"\D",
    _sre_c.CATEGORY_SPACE: r"\s",
    _sre_c.CATEGORY_NOT_SPACE: r"\S",
    _sre_c.CATEGORY_WORD: r"\w",
    _sre_c.CATEGORY_NOT_WORD: r"\W",
}


def _char(code: int) -> str:
    return re.escape(chr(code))


def _emit(items: Any) -> str:
    """The pattern again, with every run of literal characters in a capturing group and the
    pattern's own groups non-capturing: the groups that took part in a match are then
    exactly the literal characters it used."""
    out: list[str] = []
    run: list[int] = []

    def flush() -> None:
        if run:
            out.append("(" + "".join(_char(c) for c in run) + ")")
            run.clear()

    for op, av in items:
        if op is _sre_c.LITERAL:
            run.append(av)
            continue
        flush()
        out.append(_atom(op, av))
    flush()
    return "".join(out)


def _atom(op: Any, av: Any) -> str:
    if op is _sre_c.NOT_LITERAL:
        return f"[^{_char(av)}]"
    if op is _sre_c.ANY:
        return "."
    if op is _sre_c.IN:
        parts = []
        for kind, value in av:
            if kind is _sre_c.NEGATE:
                parts.insert(0, "^")
            elif kind is _sre_c.LITERAL:
                parts.append(_char(value))
            elif kind is _sre_c.RANGE:
                parts.append(f"{_char(value[0])}-{_char(value[1])}")
            elif kind is _sre_c.CATEGORY:
                parts.append(_CATEGORY[value])
            else:
                raise _Unsupported(kind)
        return "[" + "".join(parts) + "]"
    if op is _sre_c.BRANCH:
        return "(?:" + "|".join(_emit(branch) for branch in av[1]) + ")"
    if op is _sre_c.SUBPATTERN:
        _group, add_flags, del_flags, sub = av
        if add_flags or del_flags:
            raise _Unsupported("inline flags")
        return "(?:" + _emit(sub) + ")"
    if op in (_sre_c.MAX_REPEAT, _sre_c.MIN_REPEAT) or op is getattr(_sre_c, "POSSESSIVE_REPEAT", None):
        low, high, sub = av
        quantifier = "{%d,%s}" % (low, "" if high is _sre_c.MAXREPEAT else high)
        lazy = "?" if op is _sre_c.MIN_REPEAT else "+" if op is getattr(_sre_c, "POSSESSIVE_REPEAT", None) else ""
        return "(?:" + _emit(sub) + ")" + quantifier + lazy
    if op is _sre_c.AT:
        return _AT[av]
    if op in (_sre_c.ASSERT, _sre_c.ASSERT_NOT):
        direction, sub = av
        head = {(_sre_c.ASSERT, 1): "(?=", (_sre_c.ASSERT, -1): "(?<=", (_sre_c.ASSERT_NOT, 1): "(?!", (_sre_c.ASSERT_NOT, -1): "(?<!"}
        return head[(op, direction)] + _emit(sub) + ")"
    if op is getattr(_sre_c, "ATOMIC_GROUP", None):
        return "(?>" + _emit(av) + ")"
    raise _Unsupported(op)


@functools.lru_cache(maxsize=1024)
def instrumented(pattern: str) -> Any:
    """`pattern` with its literal runs as groups (see `_emit`), case-insensitive; None for a
    construct `_emit` does not rewrite (back-references, inline flags)."""
    try:
        return _linear(_emit(_sre_parse.parse(pattern)), ignore_case=True)
    except (_Unsupported, KeyError, re.error, RecursionError):
        return None


@functools.lru_cache(maxsize=1024)
def _plain(pattern: str) -> Any:
    return _linear(pattern, ignore_case=True)


def literal_score(pattern: str, text: str) -> int | None:
    """How many of `pattern`'s literal characters its first match in `text` used (None: no
    match). Case-insensitive."""
    compiled = instrumented(pattern)
    if compiled is None:  # every rule's pattern is rewritable (tested); a fallback all the same
        found = _plain(pattern).search(text)
        return None if found is None else sum(1 for op, _ in _sre_parse.parse(pattern) if op is _sre_c.LITERAL)
    found = compiled.search(text)
    if found is None:
        return None
    return sum(end - start for start, end in (found.span(i) for i in range(1, (compiled.groups or 0) + 1)) if start >= 0)


# --- matching --------------------------------------------------------------------------------


def _patterns(rule: Any) -> list[str]:
    """The rule's pattern and those of its other-version variants (the same error worded as
    another sglang revision words it)."""
    out = [rule.message_pattern]
    out += [v.message_pattern for v in rule.variants if v.message_pattern and v.message_pattern not in out]
    return out


@functools.lru_cache(maxsize=1)
def _rules() -> tuple[tuple[Any, tuple[str, ...]], ...]:
    from inkling_compat.engine.rule_load import load_rules

    return tuple((c.rule, tuple(_patterns(c.rule))) for c in load_rules())


def _alternatives(items: Any) -> list[Any]:
    items = list(items)
    if len(items) == 1 and items[0][0] is _sre_c.BRANCH:
        return list(items[0][1][1])
    return [items]


def _required(items: Any) -> str:
    """The longest run of literal characters that every match of this sequence contains
    (top-level runs, and those of mandatory one-alternative groups)."""
    best, run = "", []
    for op, av in [*items, (None, None)]:
        if op is _sre_c.LITERAL:
            run.append(chr(av))
            continue
        if op is _sre_c.SUBPATTERN and not av[1] and not av[2]:
            inner = _alternatives(av[3])
            if len(inner) == 1:
                best = max(best, _required(inner[0]), key=len)
        best = max(best, "".join(run), key=len)
        run = []
    return best


@functools.lru_cache(maxsize=1)
def _prefilter() -> tuple[Any, Any]:
    """A text can match a pattern only if it holds one of the literals every match of one of
    the pattern's alternatives holds: one search over those literals (lower case) skips most
    log lines. Patterns with an alternative without such a literal (a bare `AssertionError:`)
    are searched as they are."""
    keys: set[str] = set()
    unkeyed: list[str] = []
    for pattern, need in _needs().items():
        if need is None:
            unkeyed.append(pattern)
        else:
            keys.update(need)
    keyed = _linear("|".join(re.escape(k) for k in sorted(keys, key=len, reverse=True)))
    rest = _linear("|".join(f"(?:{p})" for p in unkeyed), ignore_case=True) if unkeyed else None
    return keyed, rest


@functools.lru_cache(maxsize=1)
def _needs() -> dict[str, tuple[str, ...] | None]:
    """Per pattern, the literals (lower case) one of which every match holds (one per
    alternative); None where an alternative has none to go by."""
    out: dict[str, tuple[str, ...] | None] = {}
    for _, patterns in _rules():
        for pattern in patterns:
            try:
                found = [_required(alt) for alt in _alternatives(_sre_parse.parse(pattern))]
            except (re.error, RecursionError):
                found = [""]
            out[pattern] = tuple(k.lower() for k in found) if all(len(k.strip()) >= 4 and k.isascii() for k in found) else None
    return out


@functools.lru_cache(maxsize=1)
def _literal_set() -> tuple[Any, tuple[str, ...]] | None:
    """Every pattern's required literals as one RE2 set: which occur in a text, in one pass."""
    try:
        import re2
    except ImportError:  # pragma: no cover - google-re2 is a dependency
        return None
    keys = tuple(sorted({k for need in _needs().values() if need for k in need}))
    options = re2.Options()
    options.log_errors = False
    options.max_mem = 64 << 20
    found = re2.Set.SearchSet(options)
    for key in keys:
        found.Add(re.escape(key))
    found.Compile()
    return found, keys


def _literals_in(lowered: str) -> set[str] | None:
    """The required literals that occur in `lowered` (None: every pattern is to be searched)."""
    literal_set = _literal_set()
    if literal_set is None:
        return None
    found, keys = literal_set
    return {keys[i] for i in found.Match(lowered) or ()}  # (None when none occurs)


def _may_match(text: str) -> bool:
    keyed, rest = _prefilter()
    return keyed.search(text.lower()) is not None or (rest is not None and rest.search(text) is not None)


def _rank(matches: dict[str, tuple[int, int, Any]]) -> tuple[Match, ...]:
    ordered = sorted(matches.values(), key=lambda item: (-item[0], item[1], item[2].id))
    return tuple(Match(rule=rule, score=score) for score, _, rule in ordered)


def match_record(texts: list[str]) -> tuple[Match, ...]:
    """The rules matching any of one record's candidate texts, most specific first."""
    texts = [t for t in texts if _may_match(t)]
    if not texts:
        return ()
    best: dict[str, tuple[int, int, Any]] = {}
    needs = _needs()
    present = [_literals_in(t.lower()) for t in texts]
    for rule, patterns in _rules():
        for pattern in patterns:
            need = needs.get(pattern)
            for text, found in zip(texts, present):
                if need is not None and found is not None and not any(k in found for k in need):
                    continue  # a literal every match holds is not there: no search of the text
                score = literal_score(pattern, text)
                if score is None:
                    continue
                entry = (score, len(pattern), rule)
                if rule.id not in best or (score, -len(pattern)) > (best[rule.id][0], -best[rule.id][1]):
                    best[rule.id] = entry
    return _rank(best)


def findings(text: str) -> list[Finding]:
    """Each error of the text that a rule explains, in the order they appear; a record whose
    best rule was already explained by an earlier one is left out (each rule once)."""
    out: list[Finding] = []
    explained: set[str] = set()
    seen: dict[tuple[str, ...], tuple[Match, ...]] = {}  # a log repeats its records: match each once
    for line, lines in records(text):
        key = tuple(lines)
        if key not in seen:
            seen[key] = match_record(candidates(lines))
        matches = seen[key]
        if not matches or matches[0].rule.id in explained:
            continue
        explained.add(matches[0].rule.id)
        out.append(Finding(line=line, text=_SPACES.sub(" ", " ".join(lines)).strip(), matches=matches))
    return out


def explain_matches(text: str) -> list[Match]:
    """Every rule that matches somewhere in the text, most specific first."""
    best: dict[str, tuple[int, int, Any]] = {}
    for line, lines in records(text):
        for m in match_record(candidates(lines)):
            if m.rule.id not in best or m.score > best[m.rule.id][0]:
                best[m.rule.id] = (m.score, len(m.rule.message_pattern), m.rule)
    return list(_rank(best))


# --- input and output ------------------------------------------------------------------------


def read_text(argument: str, stdin: Any) -> str:
    """The text to explain: the argument, or standard input for `-`. Empty text (or only
    whitespace) and text over MAX_TEXT_BYTES are input errors."""
    source = "(stdin)" if argument == "-" else "(argument)"
    if argument == "-":
        raw = stdin.buffer.read(MAX_TEXT_BYTES + 1) if hasattr(stdin, "buffer") else stdin.read(MAX_TEXT_BYTES + 1)
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    else:
        text = argument
    if len(text.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
        raise InputError(source, "text", f"more than {MAX_TEXT_BYTES} bytes; paste the part of the log around the error")
    if not text.strip():
        raise InputError(source, "text", "is empty; paste sglang's error message, a traceback or a log excerpt (`-` reads it from stdin)")
    return text


_CLASS_IN_TEXT = re.compile(r"\b([A-Z]\w*(?:Error|Exception))\b")


def _error_class(declared: str, text: str) -> str:
    """The class to print: the rule's, or where the rule derives it from the input (a template
    such as "{cls}": the class torch raises), the one the pasted text names, if any."""
    if "{" not in declared:
        return declared
    named = _CLASS_IN_TEXT.search(text)
    return named.group(1) if named else "the class torch raises (it depends on the input)"


def render(found: list[Finding], several_lines: bool) -> str:
    """One block per finding: the rule, what it means, when it happens, its fixes; the other
    rules that also match. With one finding from a one-line text, exactly the block."""
    blocks = []
    if len(found) > 1:
        blocks.append(f"{len(found)} errors in the text, each explained once, in the order they appear (lines {', '.join(str(f.line) for f in found)})")
    for finding in found:
        best = finding.matches[0].rule
        lines = [f"{best.id}: {best.title}"]
        where = f", raised at {best.stage} ({best.source.path}:{best.source.line})" if best.source else ""
        lines.append(f"  {_error_class(best.error_class, finding.text)}{where}")
        if several_lines:
            lines.append(f"  line {finding.line}: {textwrap.shorten(finding.text, 160)}")
        lines.append("\nWhat it means\n" + textwrap.indent(best.explanation.strip(), "  "))
        lines.append(f"\nWhen it happens\n  when: {best.when}\n  condition: {best.condition}")
        lines.append("\nFixes")
        lines += [f"  - {fix}" for fix in best.fixes]
        others = [m.rule.id for m in finding.matches[1:]]
        if others:
            lines.append(f"\nAlso matching: {', '.join(others)}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
