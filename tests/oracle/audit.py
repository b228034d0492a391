"""The raise-site audit: every `raise` and `assert` sglang has on an Inkling LoRA deployment's path.

It reads the audited files' source out of an sglang wheel (`AUDITED`: models/inkling.py,
models/inkling_common/**, lora/**, the LoRA argument hooks under arg_groups/; and, in every other
file a rule is pinned to, the functions the rules are pinned in) and lists, with `ast`, every
raise statement and every assert (`Site`: path, line, function, exception class, message
template; an f-string becomes a template with `{expression}` holes). Each site must be either
covered by a rule (the rule's pinned `source.path` and `source.line` fall on the site's
statement, and the site's message template reads in the rule's message) or listed in the
exclusions file (tests/data/audit_exclusions.yaml: by file, function, class and message, with a
category and a one-line reason). `check` says what does not hold for one release.

Across releases a site is what its file, function, class and message are, not its line (`match`):
`rule_sites` follows each rule's site into another release (the site data,
inkling_compat/data/sglang-sites.json, `--write-data`; a rule only older releases have is found
there by its file, function, class and message: `older_rule_sites`), and `compare` lists what another release
adds, rewords or removes that no rule, variant, exclusion or site data accounts for (what
`make audit` prints: the to-do list for supporting that release).

The code lives with the test oracles, not in the package: it reads sglang's wheel, which the
checker itself never needs, and the package must not depend on a wheel being present.

    python tests/oracle/audit.py WHEEL [--against WHEEL] [--as-new]   # the to-do list (make audit)
    python tests/oracle/audit.py --all                                # each cached release's count
    python tests/oracle/audit.py --write-data [--if-stale]            # the site data (make generate: --if-stale)
    python tests/oracle/audit.py --table                              # docs/fidelity.md's table
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXCLUSIONS = ROOT / "tests" / "data" / "audit_exclusions.yaml"

# What the audit reads from the wheel: a file prefix (a folder ends in "/"), and for files of
# which only part is on a LoRA deployment's path, the words one of whose must be in the site's
# message (validation_hook.py checks every server argument; only its LoRA checks are audited).
AUDITED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("sglang/srt/models/inkling.py", ()),
    ("sglang/srt/models/inkling_common/", ()),
    ("sglang/srt/lora/", ()),
    ("sglang/srt/arg_groups/lora_hook.py", ()),
    ("sglang/srt/arg_groups/argparse_actions.py", ()),
    ("sglang/srt/arg_groups/validation_hook.py", ("lora", "adapter")),
)

CATEGORIES = (
    "internal-invariant",  # sglang's own consistency: no user input reaches it
    "run-time-state",  # depends on requests, batches, memory, timing, not on the deployment's files
    "other-model-or-platform",  # not reached by an Inkling model on CUDA (another model, ROCm/NPU/MPS)
    "needs-checkpoint-weights",  # depends on the base checkpoint's weight contents
    "not-yet-covered",  # depends on what a user controls; no rule yet (the gap, counted in docs/fidelity.md)
)
UNREACHABLE = "unreachable-after:"  # + the rule id that fires first


@dataclass(frozen=True)
class Site:
    path: str  # as rules pin it: python/sglang/srt/...
    line: int
    end_line: int
    check_line: int  # where the check starts: the header of the `if`/`for` whose body begins with it
    function: str  # Class.method, or <module>
    function_lines: tuple[int, int]  # the function's first and last line ((0, 0) at module level)
    error_class: str  # AssertionError for an assert; "(re-raise)" for a bare `raise`
    template: str  # the message with {holes}; "" when there is none
    condition: str = ""  # the tests of the `if`s around it, outermost first (" / " between)

    @property
    def file(self) -> str:
        return self.path.split("/sglang/srt/", 1)[-1].removeprefix("python/")

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What the site is across releases: its file, function, class and message as it reads
        (not its line; a hole is a hole whatever expression fills it)."""
        return (self.path, self.function, self.error_class, _glob(self.template))


# --- reading the sites --------------------------------------------------------------------


def _template(node: ast.expr | None) -> str:
    """A message expression as a template: literals as they are, anything computed as {its source}."""
    if node is None:
        return ""
    if isinstance(node, ast.Constant):
        return str(node.value)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            else:
                assert isinstance(value, ast.FormattedValue)
                conversion = {-1: "", 115: "!s", 114: "!r", 97: "!a"}[value.conversion]
                spec = ":" + _template(value.format_spec) if value.format_spec is not None else ""
                parts.append("{" + ast.unparse(value.value) + conversion + spec + "}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _template(node.left) + _template(node.right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant):
        return re.sub(r"%[-#0 +]*\d*(?:\.\d+)?[sdrfigx]", "{}", str(node.left.value))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, (ast.Constant, ast.JoinedStr))
    ):
        return _template(node.func.value)
    return "{" + ast.unparse(node) + "}"


def _raised(node: ast.Raise) -> tuple[str, str]:
    exc = node.exc
    if exc is None:
        return "(re-raise)", ""
    if isinstance(exc, ast.Call):
        name = ast.unparse(exc.func).rsplit(".", 1)[-1]
        message = exc.args[0] if exc.args else next((k.value for k in exc.keywords if k.arg in ("msg", "message")), None)
        return name, _template(message)
    return ast.unparse(exc).rsplit(".", 1)[-1], ""


def _check_line(node: ast.stmt, parents: dict[ast.AST, ast.AST]) -> int:
    """The first line of the check that leads to `node`: rules pin the `if` (or the loop over
    the cases) more often than the raise below it. Climbs while `node` opens its parent's body,
    or the `else` of an `if` (whose test decides both branches)."""
    line = node.lineno
    while (parent := parents.get(node)) is not None and isinstance(parent, (ast.If, ast.For, ast.While)):
        opens_body = bool(parent.body) and parent.body[0] is node
        opens_else = isinstance(parent, ast.If) and bool(parent.orelse) and parent.orelse[0] is node
        if not (opens_body or opens_else):
            break
        line, node = parent.lineno, parent
    return line


def _condition(node: ast.stmt, parents: dict[ast.AST, ast.AST]) -> str:
    """The tests of the `if`/`while` statements around `node` up to its function, outermost first:
    what decides whether the site is reached (a changed test is a changed condition)."""
    tests = []
    while (parent := parents.get(node)) is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        if isinstance(parent, (ast.If, ast.While)):
            tests.append(("not " if isinstance(parent, ast.If) and node in parent.orelse else "") + ast.unparse(parent.test))
        node = parent
    return " / ".join(reversed(tests))


def sites_of(source: str, path: str, tree: ast.Module | None = None) -> list[Site]:
    """Every raise and assert of one file, in line order, with the function it is in."""
    found: list[Site] = []
    tree = tree or ast.parse(source)
    # Each node's parent, recorded on the way down: a site's ancestors are all recorded when it
    # is reached (one walk of the tree, not two: an older wheel's audit parses hundreds of files).
    parents: dict[ast.AST, ast.AST] = {}

    def visit(node: ast.AST, scope: tuple[str, ...], lines: tuple[int, int]) -> None:
        for child in ast.iter_child_nodes(node):
            parents[child] = node
            inner, inner_lines = scope, lines
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = scope + (child.name,)
                if not isinstance(child, ast.ClassDef):
                    inner_lines = (child.lineno, child.end_lineno or child.lineno)
            if isinstance(child, ast.Raise):
                error_class, template = _raised(child)
            elif isinstance(child, ast.Assert):
                error_class, template = "AssertionError", _template(child.msg)
            else:
                visit(child, inner, inner_lines)
                continue
            function = ".".join(scope) or "<module>"
            end = child.end_lineno or child.lineno
            found.append(Site(path, child.lineno, end, _check_line(child, parents), function, lines, error_class, template,
                              _condition(child, parents)))
            visit(child, inner, inner_lines)

    visit(tree, (), (0, 0))
    return sorted(found, key=lambda s: s.line)


@dataclass(frozen=True)
class Anchor:
    """A line a rule may pin that is no raise: a logged warning, or a statement in a function
    (a Python or torch error raised inside a call, a derived rule's step)."""

    path: str
    first: int
    last: int
    kind: str  # "log" | "function" | "class"
    name: str  # the function's (class's) qualified name, or the log call
    template: str
    function: str = "<module>"  # where a log call is

_LOG_CALLS = ("warning", "warning_once", "warn", "error", "info", "info_once", "print_warning_once")


def anchors_of(source: str, path: str, tree: ast.Module | None = None) -> list[Anchor]:
    found: list[Anchor] = []

    def visit(node: ast.AST, scope: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = scope + (child.name,)
                kind = "class" if isinstance(child, ast.ClassDef) else "function"
                found.append(Anchor(path, child.lineno, child.end_lineno or child.lineno, kind, ".".join(inner), ""))
            if (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Attribute)
                and child.func.attr in _LOG_CALLS
                and child.args
            ):
                found.append(Anchor(path, child.lineno, child.end_lineno or child.lineno, "log", ast.unparse(child.func),
                                    _template(child.args[0]), ".".join(scope) or "<module>"))
            visit(child, inner)

    visit(tree or ast.parse(source), ())
    return found


def audited_files(names: Iterable[str]) -> list[tuple[str, tuple[str, ...]]]:
    chosen = []
    for name in sorted(names):
        if not name.endswith(".py"):
            continue
        for prefix, words in AUDITED:
            if name == prefix or (prefix.endswith("/") and name.startswith(prefix)):
                chosen.append((name, words))
                break
    return chosen


@dataclass(frozen=True)
class Scan:
    sites: tuple[Site, ...]
    anchors: tuple[Anchor, ...]
    lines: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False)  # each read file's lines
    release: str = ""
    wheel: Path | None = field(default=None, compare=False)


def wheel_release(wheel: Path) -> str:
    """The release a wheel's file name says (sglang-0.5.22-cp311-...whl -> 0.5.22)."""
    parts = wheel.name.split("-")
    return parts[1] if len(parts) > 2 else wheel.stem


_SCANS: dict[Any, Scan] = {}


def read_sites(wheel: Path, scope: Mapping[str, frozenset[str]] | None = None) -> Scan:
    """Every audited site of a wheel, and the other lines a rule may pin. `scope`: files
    outside `AUDITED` that rules pin (python/sglang/...), each with the functions (classes)
    whose sites are audited: the ones the rules' pinned lines are in (`pinned_scope`).
    (Kept per wheel and scope: an audit of each release reads the default one again.)"""
    key = (Path(wheel).resolve(), Path(wheel).stat().st_mtime_ns, tuple(sorted((scope or {}).items())))
    if key not in _SCANS:
        _SCANS[key] = _read_sites(wheel, scope)
    return _SCANS[key]


def _read_sites(wheel: Path, scope: Mapping[str, frozenset[str]] | None) -> Scan:
    sites: list[Site] = []
    anchors: list[Anchor] = []
    lines: dict[str, tuple[str, ...]] = {}
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        chosen = [(name, words, None) for name, words in audited_files(names)]
        chosen += [(path.removeprefix("python/"), (), functions) for path, functions in sorted((scope or {}).items())
                   if path.removeprefix("python/") in names and not audited_files([path.removeprefix("python/")])]
        for name, words, functions in chosen:
            source = archive.read(name).decode("utf-8")
            path = "python/" + name
            tree = ast.parse(source)
            if (name, source) not in _PARSED_SITES:  # (kept: find_elsewhere may search this file)
                _PARSED_SITES[name, source] = sites_of(source, path, tree)
            for site in _PARSED_SITES[name, source]:
                if functions is not None and not any(_within(site.function, f) for f in functions):
                    continue
                if not words or any(w in site.template.lower() for w in words):
                    sites.append(site)
            anchors.extend(anchors_of(source, path, tree))
            lines[path] = tuple(source.splitlines())
    return Scan(tuple(sites), tuple(anchors), lines, wheel_release(wheel), Path(wheel))


def _within(function: str, scope: str) -> bool:
    return function == scope or function.startswith(scope + ".")


def enclosing(anchors: Sequence[Anchor], path: str, line: int) -> Anchor | None:
    """The innermost function or class of `path` that holds `line`."""
    holding = [a for a in anchors if a.kind in ("function", "class") and a.path == path and a.first <= line <= a.last]
    return min(holding, key=lambda a: a.last - a.first, default=None)


def pinned_scope(wheel: Path, all_pins: Sequence["Pin"]) -> dict[str, frozenset[str]]:
    """The files outside `AUDITED` that rules pin, each with the functions their pinned lines
    are in (read from `wheel`, the release the pins' lines are of)."""
    key = (Path(wheel).resolve(), tuple(all_pins))
    if key not in _SCOPES:
        _SCOPES[key] = _pinned_scope(wheel, all_pins)
    return _SCOPES[key]


_SCOPES: dict[Any, dict[str, frozenset[str]]] = {}


def _pinned_scope(wheel: Path, all_pins: Sequence["Pin"]) -> dict[str, frozenset[str]]:
    paths = {p.path for p in all_pins if not audited_files([p.path.removeprefix("python/")])}
    found: dict[str, set[str]] = {}
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for path in sorted(paths):
            if path.removeprefix("python/") not in names:
                continue
            anchors = anchors_of(archive.read(path.removeprefix("python/")).decode("utf-8"), path)
            for pin in all_pins:
                if pin.path == path and (where := enclosing(anchors, path, pin.line)) is not None:
                    found.setdefault(path, set()).add(where.name)
    return {path: frozenset(functions) for path, functions in found.items()}


# --- covered by rules ---------------------------------------------------------------------

_HOLE = re.compile(r"\{[^{}]*\}")


def _glob(template: str) -> str:
    """A template as a pattern whose only wildcard is NUL (a hole: any text)."""
    return _HOLE.sub("\0", template.replace("{{", "\1").replace("}}", "\2")).replace("\1", "{").replace("\2", "}")


# A rule's hole stands for a value (a module name, a number), a site's for anything the code
# computes (a loop variable holding a whole sentence): a rule's hole may read as at most this
# much of the site's literal text.
VALUE_CHARS = 32
VALUE_SPACES = 2


def template_matches(site_template: str, rule_message: str) -> bool:
    """Some text reads as both the site's template and the rule's message: a site's hole as any
    text, a rule's hole as a short value (`{module}` for the site's spelt-out "gate_up_proj_moe
    lora_A"). A site that builds its message from a loop variable (`f"{option} does not yet
    support {mode}"`) matches each rule that spells one mode out."""
    a, b = _glob(site_template), _glob(rule_message)
    if b == "\0":
        return True  # the rule reports a replay's text (`{text}`): whatever the site says
    seen: set[tuple[int, int]] = set()
    frontier = [(0, 0)]
    while frontier:
        i, j = frontier.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(a) and j == len(b):
            return True
        if i < len(a) and a[i] == "\0":
            frontier.append((i + 1, j))  # the site's hole ends
            if j < len(b):
                frontier.append((i, j + 1))  # ... or reads one more character of the rule's
            continue
        if j < len(b) and b[j] == "\0":
            frontier.append((i, j + 1))
            spaces = 0
            for k in range(i, min(len(a), i + VALUE_CHARS)):
                if a[k] == "\0":
                    break
                spaces += a[k] == " "
                if spaces > VALUE_SPACES:
                    break
                frontier.append((k + 1, j + 1))
            continue
        if i < len(a) and j < len(b) and a[i] == b[j]:
            frontier.append((i + 1, j + 1))
    return False


def _spelt_out_elsewhere(site: Site) -> bool:
    """A message built from data listed elsewhere in the function (a table of (check, reason)):
    a rule may pin the table's entry instead of the raise."""
    return "{" in site.template and any(len(f.strip()) >= 12 for f in _HOLE.split(site.template))


@dataclass(frozen=True)
class Pin:
    rule_id: str
    path: str
    line: int
    message: str  # the template of the version whose line this is
    function: str | None
    error_class: str
    derived: bool  # origin derived: the message is the checker's, the line what it foresees


DEFAULT_RELEASE = "0.5.23"  # the release the rules' `source.line`s are of
DATA = ROOT / "inkling_compat" / "data" / "sglang-sites.json"


def load_data(path: Path = DATA) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"releases": [], "rules": {}}


def rule_as_in(compiled: Any, release: str, as_release: str | None = None) -> Any:
    """The rule as it reads in `release` (a variant where it has one), or None; a release no
    rule names yet reads as `as_release` (default: the default release)."""
    from inkling_compat.inputs.versions import SGLANG_VERSIONS

    version = release if release in SGLANG_VERSIONS else (as_release or DEFAULT_RELEASE)
    found = compiled.for_version(version)
    return found.rule if found is not None else None


def pins(version: str = DEFAULT_RELEASE, data: Mapping[str, Any] | None = None) -> list[Pin]:
    """Every rule's pinned source in one sglang release (a variant's source where it has one):
    the YAML's line in the default release, the site data's line in another (a rule whose site
    the release lacks has no pin there)."""
    from inkling_compat.engine.rule_load import load_rules

    lines = None
    if version != DEFAULT_RELEASE:
        data = data if data is not None else load_data()
        if version in data["releases"]:
            lines = data["rules"]
    found = []
    for compiled in load_rules():
        rule = compiled.for_version(version)
        if rule is None:
            continue
        rule = rule.rule
        source = rule.source
        if source is None or source.line is None:
            continue
        line, path = source.line, source.path
        if lines is not None:
            entry = lines.get(rule.id, {}).get(version)
            if entry is None:
                continue
            line = entry if isinstance(entry, int) else entry["line"]
            path = entry.get("path", path) if isinstance(entry, dict) else path
        # A joined raise ("ineligible: {a}; {b}") reads as the join's prefix and the message.
        message = (rule.join.prefix if rule.join else "") + rule.message
        found.append(Pin(rule.id, path, line, message, source.function, rule.error_class, rule.origin == "derived"))
    return found


def _pinned_at(site: Site, pin: Pin) -> bool:
    if pin.path != site.path:
        return False
    if site.check_line <= pin.line <= site.end_line:
        return True
    first, last = site.function_lines
    return _spelt_out_elsewhere(site) and first <= pin.line <= last


def _same_class(site: Site, pin: Pin) -> bool:
    return pin.error_class == site.error_class or "{" in pin.error_class or site.error_class[:1].islower()


def covering(site: Site, all_pins: Sequence[Pin]) -> list[Pin]:
    """The rules that report this site: sglang's own message (not a derived rule's words), its
    class, pinned at the check."""
    return [
        p for p in all_pins
        if not p.derived and _same_class(site, p) and _pinned_at(site, p) and template_matches(site.template, p.message)
    ]


# --- exclusions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Exclusion:
    """A site no rule covers, by what it is across releases (file, function, class, message):
    every site of that function with that class and message, wherever it sits."""

    path: str
    function: str
    error_class: str
    message: str
    category: str
    reason: str
    releases: tuple[str, ...] | None = None  # the releases that have the site (None: wherever it is)

    def applies(self, release: str) -> bool:
        return self.releases is None or release in self.releases

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.path, self.function, self.error_class, _glob(self.message))


def load_exclusions(path: Path = EXCLUSIONS) -> list[Exclusion]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    found = []
    for file, entries in (data.get("files") or {}).items():
        for entry in entries:
            releases = tuple(entry["releases"]) if entry.get("releases") else None
            found.append(Exclusion(file, entry["function"], entry["class"], entry.get("message", ""), entry["category"],
                                   entry["reason"], releases))
    return found


def _excludes(exclusion: Exclusion, site: Site) -> bool:
    return exclusion.key == site.key


# --- the check ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    site: Site
    rules: tuple[str, ...]  # the rules that cover it
    category: str | None  # the exclusion's category, if excluded


@dataclass(frozen=True)
class Audit:
    verdicts: tuple[Verdict, ...]
    problems: tuple[str, ...]  # what fails the test, one line each


def check(scan: Scan, all_pins: Sequence[Pin], exclusions: Sequence[Exclusion], rule_ids: set[str],
          release: str | None = None) -> Audit:
    """One release's sites against the rules pinned there and the exclusions that apply to it."""
    release = release or scan.release or DEFAULT_RELEASE
    sites = scan.sites
    problems: list[str] = []
    verdicts = []
    applying = [e for e in exclusions if e.applies(release)]
    used: set[Exclusion] = set()
    for key, count in Counter(e.key for e in applying).items():
        if count > 1:
            problems.append(f"exclusion {key[0]} {key[1]} {key[2]} {key[3]!r}: listed {count} times")
    for site in sites:
        rules = tuple(sorted({p.rule_id for p in covering(site, all_pins)}))
        # An exclusion names every site of its function with its class and message: those
        # a rule covers are the rule's (an exclusion only they would use is reported unused).
        matched = [] if rules else [e for e in applying if _excludes(e, site)]
        used.update(matched)
        where = f"{site.path}:{site.line} {site.error_class} {site.template!r}"
        if not rules and not matched:
            problems.append(f"{where} ({site.function}): neither covered by a rule nor excluded")
        verdicts.append(Verdict(site, rules, matched[0].category if matched else None))
    for exclusion in applying:
        where = f"exclusion {exclusion.path} {exclusion.function} {exclusion.error_class} {exclusion.message!r}"
        # An exclusion of every release must name a site of the default release; one of
        # named releases, a site of each (a site older releases lack is no problem).
        if exclusion not in used and (exclusion.releases is not None or release == DEFAULT_RELEASE):
            problems.append(f"{where}: no such site in {release} (or a rule covers every one)")
        category = exclusion.category
        if category.startswith(UNREACHABLE):
            if category[len(UNREACHABLE):] not in rule_ids:
                problems.append(f"{where}: {category}: no such rule")
        elif category not in CATEGORIES:
            problems.append(f"{where}: unknown category {category!r}")
        if not exclusion.reason.strip():
            problems.append(f"{where}: no reason")
    # A pin into a file the audit read must still hold what the rule says: the raise with its
    # message, the logged warning with its text, or (a Python or torch error inside a call)
    # a line of the function the rule names.
    audited = {a.path for a in scan.anchors}
    for pin in all_pins:
        if pin.path not in audited:
            problems.append(f"rule {pin.rule_id}: {pin.path} is not in sglang {release}")
            continue
        if any(pin.rule_id in v.rules for v in verdicts):
            continue
        where = f"rule {pin.rule_id}: {pin.path}:{pin.line}"
        on_site = [
            s for s in sites
            if s.path == pin.path and s.check_line <= pin.line <= s.end_line and not pin.derived and _same_class(s, pin)
        ]
        logs = [a for a in scan.anchors if a.kind == "log" and a.path == pin.path and a.first <= pin.line <= a.last]
        functions = [a for a in scan.anchors if a.kind in ("function", "class") and a.path == pin.path and a.first <= pin.line <= a.last]
        if on_site:
            problems.append(f"{where} raises {on_site[0].template!r}, not the rule's message")
        elif logs:
            if not any(template_matches(a.template, pin.message) for a in logs):
                problems.append(f"{where} logs {logs[0].template!r}, not the rule's message")
        elif not functions or (pin.function and not any(_same_function(a.name, pin.function) for a in functions)):
            found = ", ".join(a.name for a in functions) or "no function"
            problems.append(f"{where} is in {found}, not in {pin.function}")
    return Audit(tuple(verdicts), tuple(problems))


def _same_function(qualified: str, pinned: str) -> bool:
    """A rule's `function` ("Class.method", "helper (from caller)") names this function (or the
    function that holds it)."""
    name = pinned.split(" ", 1)[0].strip("`()")
    return qualified == name or qualified.endswith("." + name) or qualified.startswith(name + ".")


def table(audit: Audit) -> list[tuple[str, int, int, Counter]]:
    """Per file: sites, covered, and the excluded ones by category."""
    rows: dict[str, tuple[int, int, Counter]] = {}
    for v in audit.verdicts:
        total, covered, excluded = rows.get(v.site.file, (0, 0, Counter()))
        if v.category is not None:
            category = "unreachable-after" if v.category.startswith(UNREACHABLE) else v.category
            excluded[category] += 1
        rows[v.site.file] = (total + 1, covered + bool(v.rules), excluded)
    return [(f, t, c, e) for f, (t, c, e) in sorted(rows.items())]


COLUMNS = ("internal-invariant", "run-time-state", "other-model-or-platform", "needs-checkpoint-weights",
           "unreachable-after", "not-yet-covered")


def markdown_table(audit: Audit) -> str:
    head = "| file | sites | covered by rules | " + " | ".join(COLUMNS) + " |"
    lines = [head, "|" + "---|" * (3 + len(COLUMNS))]
    totals = [0, 0] + [0] * len(COLUMNS)
    for file, total, covered, excluded in table(audit):
        values = [total, covered] + [excluded[c] for c in COLUMNS]
        totals = [a + b for a, b in zip(totals, values)]
        lines.append(f"| {file} | " + " | ".join(str(v) for v in values) + " |")
    lines.append("| **all** | " + " | ".join(f"**{v}**" for v in totals) + " |")
    return "\n".join(lines)


# --- two releases -------------------------------------------------------------------------


@dataclass(frozen=True)
class Match:
    same: tuple[tuple[Site, Site], ...]  # (old, new): same file, function, class and message (any line)
    reworded: tuple[tuple[Site, Site], ...]  # (old, new): same file, function and class, another message
    added: tuple[Site, ...]
    removed: tuple[Site, ...]


def match(old: Sequence[Site], new: Sequence[Site]) -> Match:
    """Each site of one release paired with the same site of another, by what it is (file,
    function, class, message), in line order; what stays unpaired in a function that raises
    the same class is a rewording (the same condition preferred)."""
    left, right = list(old), list(new)
    same = []
    for site in list(left):
        other = next((n for n in right if n.key == site.key), None)
        if other is not None:
            left.remove(site)
            right.remove(other)
            same.append((site, other))
    reworded = []
    for site in list(left):
        candidates = [n for n in right if n.key[:3] == site.key[:3]]
        other = next((n for n in candidates if n.condition == site.condition), candidates[0] if candidates else None)
        if other is not None:
            left.remove(site)
            right.remove(other)
            reworded.append((site, other))
    return Match(tuple(same), tuple(reworded), tuple(right), tuple(left))


@dataclass(frozen=True)
class Diff:
    added: tuple[Site, ...]
    removed: tuple[Site, ...]
    moved: tuple[tuple[Site, Site], ...]  # (old, new): same function, class and message, another line
    reworded: tuple[tuple[Site, Site], ...]  # (old, new): same function and class, another message


def diff(old: Sequence[Site], new: Sequence[Site]) -> Diff:
    m = match(old, new)
    return Diff(m.added, m.removed, tuple((a, b) for a, b in m.same if a.line != b.line), m.reworded)


def _line_like(text: str, lines: Sequence[str], first: int, last: int, near: int) -> int | None:
    """The line of `lines` (1-based, within first..last) that reads as `text`, nearest `near`."""
    want = text.strip()
    found = [i for i in range(max(first, 1), min(last, len(lines)) + 1) if lines[i - 1].strip() == want]
    return min(found, key=lambda i: abs(i - near), default=None)


def _body(scan: Scan, anchor: Anchor) -> str:
    return "\n".join(line.strip() for line in scan.lines[anchor.path][anchor.first - 1:anchor.last])


def rule_sites(base: Scan, base_audit: Audit, base_pins: Sequence[Pin], other: Scan) -> dict[str, Any]:
    """Where each pinned rule's site is in `other`: its line (an int), a dict when its message
    or condition changed ({"line", "message", "condition": true}), or None where the release
    lacks it. A raise is found by its file, function, class and message; a logged warning by
    its function and text; a line in a function by the function's name and the line's text."""
    m = match(base.sites, other.sites)
    to_other = {id(a): b for a, b in m.same + m.reworded}
    covered: dict[str, list[Site]] = {}
    for verdict in base_audit.verdicts:
        for rule in verdict.rules:
            covered.setdefault(rule, []).append(verdict.site)
    out: dict[str, Any] = {}
    for pin in base_pins:
        text = base.lines.get(pin.path, ())
        pinned_text = text[pin.line - 1] if 0 < pin.line <= len(text) else ""
        entry: Any = None
        if pin.rule_id in covered:
            site = min(covered[pin.rule_id], key=lambda s: abs(s.check_line - pin.line))
            new = to_other.get(id(site))
            lines = other.lines.get(new.path, ()) if new is not None else ()
            if new is None and other.wheel is not None:
                # Not in its file (or its file is not in the release): the same raise in
                # another file (older releases kept the LoRA checks in server_args.py).
                found = find_elsewhere(other.wheel, site)
                if found is not None:
                    new, lines = found
            if new is not None:
                first, last = new.function_lines if new.function_lines != (0, 0) else (new.check_line, new.end_line)
                near = new.check_line + (pin.line - site.check_line)
                line = _line_like(pinned_text, lines, first, last, near) or new.check_line
                changes: dict[str, Any] = {}
                if new.path != site.path:
                    changes.update(path=new.path, function=new.function)
                if _glob(new.template) != _glob(site.template):
                    changes["message"] = new.template
                if new.condition != site.condition:
                    changes["condition"] = True
                entry = dict(line=line, **changes) if changes else line
        else:
            logs = [a for a in base.anchors if a.kind == "log" and a.path == pin.path and a.first <= pin.line <= a.last]
            if logs:
                log = logs[0]
                new_log = next((a for a in other.anchors if a.kind == "log" and a.path == pin.path
                                and a.function == log.function and _glob(a.template) == _glob(log.template)), None)
                entry = None if new_log is None else new_log.first + (pin.line - log.first)
                if new_log is None and other.wheel is not None:
                    moved_log = find_log_elsewhere(other.wheel, log)
                    if moved_log is not None:
                        entry = {"line": moved_log.first + (pin.line - log.first), "path": moved_log.path, "function": moved_log.function}
            elif (where := enclosing(base.anchors, pin.path, pin.line)) is not None:
                new_where = next((a for a in other.anchors if a.kind == where.kind and a.path == pin.path and a.name == where.name), None)
                if new_where is not None:
                    near = new_where.first + (pin.line - where.first)
                    line = _line_like(pinned_text, other.lines[pin.path], new_where.first, new_where.last, near)
                    entry = line if line is not None and _body(base, where) == _body(other, new_where) else {
                        "line": line or new_where.first, "condition": True}
        out[pin.rule_id] = entry
    return out


_SOURCES: dict[Path, dict[str, str]] = {}


def _wheel_sources(wheel: Path) -> dict[str, str]:
    """Every Python file of the wheel's sglang package, by name (kept per wheel)."""
    if wheel not in _SOURCES:
        with zipfile.ZipFile(wheel) as archive:
            _SOURCES[wheel] = {n: archive.read(n).decode("utf-8", "replace") for n in archive.namelist()
                               if n.startswith("sglang/") and n.endswith(".py")}
    return _SOURCES[wheel]


_FOUND: dict[tuple[Path, Site], tuple[Site, tuple[str, ...]] | None] = {}


def find_elsewhere(wheel: Path, site: Site) -> tuple[Site, tuple[str, ...]] | None:
    """The raise with `site`'s class and message in any file of the wheel (the same function's
    name preferred), with that file's lines; None if there is none or the message is too short
    to tell (a bare assert). (Kept: several rules pin one site.)"""
    if (wheel, site) not in _FOUND:
        _FOUND[wheel, site] = _find_elsewhere(wheel, site)
    return _FOUND[wheel, site]


_WORD = re.compile(r"[A-Za-z0-9_]{4,}")


def _find_elsewhere(wheel: Path, site: Site) -> tuple[Site, tuple[str, ...]] | None:
    pieces = [p.strip() for p in _HOLE.split(site.template)]
    literal = max(pieces, key=len, default="")
    if len(literal) < 16:
        return None
    # Probes short enough to sit inside one source literal (a message is often split over lines).
    probes = {literal[:16], literal[len(literal) // 2:][:16], literal[-16:]}
    name = site.function.rsplit(".", 1)[-1]
    # A raised class's name is in the source as written (`_raised` reads it from there); an
    # `assert` raises AssertionError without naming it.
    named = site.error_class if site.error_class not in ("AssertionError", "(re-raise)") else ""
    # Every word of the message's literal text is in a file that raises it (a message is split
    # over literals between words): most files holding a probe (a common phrase) lack one.
    words = {w for piece in pieces for w in _WORD.findall(piece)}
    found = []
    for file, source in _wheel_sources(wheel).items():
        if named not in source or not any(probe in source for probe in probes) or not all(w in source for w in words):
            continue
        for other in _parsed_sites(wheel, file):
            if other.error_class == site.error_class and _glob(other.template) == _glob(site.template):
                found.append((other.function.rsplit(".", 1)[-1] != name, other.path, other.line, other, file))
    if not found:
        return None
    *_, other, file = min(found)
    return other, tuple(_wheel_sources(wheel)[file].splitlines())


# Kept by file name and text: a file of one release is searched for many rules, and the audits
# of several releases in one process parse each file they share once.
_PARSED_SITES: dict[tuple[str, str], list[Site]] = {}
_PARSED_ANCHORS: dict[tuple[str, str], list[Anchor]] = {}


def _parsed_sites(wheel: Path, file: str) -> list[Site]:
    """A file of the wheel's sites."""
    key = (file, _wheel_sources(wheel)[file])
    if key not in _PARSED_SITES:
        try:
            _PARSED_SITES[key] = sites_of(key[1], "python/" + file)
        except SyntaxError:
            _PARSED_SITES[key] = []
    return _PARSED_SITES[key]


def _parsed_anchors(wheel: Path, file: str) -> list[Anchor]:
    """A file of the wheel's anchors (read apart from its sites: a few files are searched for a
    logged warning, many for a raise)."""
    key = (file, _wheel_sources(wheel)[file])
    if key not in _PARSED_ANCHORS:
        try:
            _PARSED_ANCHORS[key] = anchors_of(key[1], "python/" + file)
        except SyntaxError:
            _PARSED_ANCHORS[key] = []
    return _PARSED_ANCHORS[key]


def find_log_elsewhere(wheel: Path, log: Anchor) -> Anchor | None:
    """The logged warning with `log`'s text in any file of the wheel."""
    literal = max((p.strip() for p in _HOLE.split(log.template)), key=len, default="")
    if len(literal) < 16:
        return None
    probes = {literal[:16], literal[-16:]}
    for file, source in _wheel_sources(wheel).items():
        if any(probe in source for probe in probes):
            for other in _parsed_anchors(wheel, file):
                if other.kind == "log" and _glob(other.template) == _glob(log.template):
                    return other
    return None


@dataclass(frozen=True)
class Todo:
    kind: str  # added | reworded | removed | condition | data
    text: str
    problem: bool  # False: to read, not to fix (a moved or conditional change to review)


def compare(base: Scan, base_audit: Audit, other: Scan, exclusions: Sequence[Exclusion],
            as_release: str | None = None, data: Mapping[str, Any] | None = None,
            base_pins: Sequence[Pin] = (), rules: Mapping[str, Any] | None = None) -> list[Todo]:
    """What supporting `other`'s release takes, from `base`'s audit: each site it adds, rewords
    or removes that no rule (as the rule reads in that release) or exclusion accounts for,
    each covered site whose condition changed (to review), and site data that is not current.
    `as_release`: treat the release as new (its rules and exclusions as of this release)."""
    from inkling_compat.engine.rule_load import load_rules

    release = other.release
    if rules is None:  # each rule as it reads in the release (None: not there)
        rules = {c.rule.id: rule_as_in(c, release if as_release is None else as_release, as_release) for c in load_rules()}
        if as_release is not None:  # only the rules the earlier release has a site for were written then
            lacking = {r for r, entry in (data or load_data())["rules"].items() if entry.get(as_release, 0) is None}
            rules = {r: (None if r in lacking else rule) for r, rule in rules.items()}
    if as_release is not None:
        known = {e for e in exclusions if e.applies(as_release) and any(_excludes(e, v.site) for v in base_audit.verdicts)}
        exclusions = [e for e in known]
    applying = [e for e in exclusions if e.applies(release) if as_release is None or e in exclusions]
    verdict_of = {id(v.site): v for v in base_audit.verdicts}
    m = match(base.sites, other.sites)
    todo: list[Todo] = []

    def message(rule: Any) -> str:
        return (rule.join.prefix if rule.join else "") + rule.message

    for site in m.added:
        if any(_excludes(e, site) for e in applying):
            continue
        if any(r is not None and r.source is not None and r.source.path == site.path and r.source.function
               and _same_function(site.function, r.source.function) and template_matches(site.template, message(r))
               for r in rules.values()):
            continue
        todo.append(Todo("added", f"{_show(site)}: write a rule (or a variant for {release}), or exclude it", True))
    for old, new in m.reworded:
        verdict = verdict_of[id(old)]
        for rule_id in verdict.rules:
            rule = rules.get(rule_id)
            if rule is not None and not template_matches(new.template, message(rule)):
                todo.append(Todo("reworded", f"rule {rule_id}: {_show(old)}\n    -> {release} line {new.line}: "
                                 f"{new.template!r}: give the rule a variant for {release} with these words", True))
        if verdict.category is not None and not any(_excludes(e, new) for e in applying):
            todo.append(Todo("reworded", f"{_show(old)}\n    -> {release} line {new.line}: {new.template!r}: "
                             f"excluded ({verdict.category}); exclude the new words too (releases: [{release}])", True))
    data_rules = (data or {}).get("rules", {}) if data is not None and release in data.get("releases", ()) else None
    for old in m.removed:
        for rule_id in verdict_of[id(old)].rules:
            if rules.get(rule_id) is None:
                continue
            entry = data_rules.get(rule_id, {}).get(release, 0) if data_rules is not None else 0
            if entry is None:
                continue  # the site data says the release lacks it: the rule is not evaluated there
            if isinstance(entry, dict) and "path" in entry:
                continue  # the site data found it in another file
            todo.append(Todo("removed", f"rule {rule_id}: {_show(old)} is not in {release}: record it in the site "
                             f"data (tests/oracle/audit.py --write-data) so the rule is not evaluated there", True))
    # A rule with a variant for the release was written for its condition already.
    varied = {c.rule.id for c in load_rules() if any(release in v.sglang_versions for v in c.rule.variants)} if as_release is None else set()
    for old, new in m.same + m.reworded:
        if old.condition != new.condition and set(verdict_of[id(old)].rules) - varied:
            todo.append(Todo("condition", f"{', '.join(verdict_of[id(old)].rules)}: {_show(old)}: checked when "
                             f"{old.condition!r}, in {release} when {new.condition!r}: review the rule's condition", False))
    if data_rules is not None and base_pins:
        fresh = rule_sites(base, base_audit, base_pins, other)
        stale = sorted(r for r, entry in fresh.items() if data_rules.get(r, {}).get(release, "missing") != entry)
        if stale:
            todo.append(Todo("data", f"the site data of {release} is not current for {len(stale)} rules "
                             f"({', '.join(stale[:5])}{', ...' if len(stale) > 5 else ''}): tests/oracle/audit.py --write-data", True))
    return todo


def data_pins(all_pins: Sequence[Pin]) -> list[Pin]:
    """The pins the site data follows: not the argparse rules' (a choices list: each release's
    argument table says which choices it has)."""
    from inkling_compat.engine.rule_load import load_rules

    argparse_ids = {c.rule.id for c in load_rules() if c.rule.origin == "argparse"}
    return [p for p in all_pins if p.rule_id not in argparse_ids]


def older_rule_sites(other: Scan) -> dict[str, Any]:
    """Where each rule the default release has no form of (a site only older releases have) has
    its site in `other`: by the rule's file, function, class and message as it reads there (the
    way an exclusion names a site), the raise's line; None where the rule does not apply to the
    release or the release lacks the site."""
    from inkling_compat.engine.rule_load import load_rules

    out: dict[str, Any] = {}
    for compiled in load_rules():
        if compiled.for_version(DEFAULT_RELEASE) is not None:
            continue
        found = compiled.for_version(other.release)
        rule = found.rule if found is not None else None
        source = rule.source if rule is not None else None
        site = None
        if rule is not None and source is not None and source.function:
            pin = Pin(rule.id, source.path, 0, (rule.join.prefix if rule.join else "") + rule.message, source.function,
                      rule.error_class, rule.origin == "derived")
            site = next((s for s in other.sites if s.path == pin.path and _same_function(s.function, pin.function)
                         and _same_class(s, pin) and template_matches(s.template, pin.message)), None)
        out[compiled.rule.id] = site.line if site is not None else None
    return out


def _with_older_rules(scope: Mapping[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    """`scope` and the functions of the rules only older releases have (the default release
    lacks them, so no pinned line of it names them): their sites are searched there too."""
    from inkling_compat.engine.rule_load import load_rules

    out = dict(scope)
    for compiled in load_rules():
        if compiled.for_version(DEFAULT_RELEASE) is not None:
            continue
        source = compiled.rule.source
        if source is not None and source.function and not audited_files([source.path.removeprefix("python/")]):
            out[source.path] = out.get(source.path, frozenset()) | {source.function.split(" ", 1)[0].strip("`()")}
    return out


def data_inputs() -> str:
    """A digest of what the site data is made from besides the wheels (a release's wheel never
    changes): the audit's code (this file), the exclusions, the supported releases and, per rule
    and release, what the audit reads of the rule (its source, message, error class, origin).
    The data records it (`inputs`), so a stale file is found without the wheels."""
    import hashlib

    from inkling_compat.engine.rule_load import load_rules
    from inkling_compat.inputs.versions import SGLANG_RELEASES

    read: dict[str, Any] = {}
    for compiled in load_rules():
        for release in SGLANG_RELEASES:
            found = compiled.for_version(release)
            rule = found.rule if found is not None else None
            source = rule.source if rule is not None else None
            read.setdefault(compiled.rule.id, {})[release] = None if rule is None else [
                source and [source.path, source.line, source.function], rule.join and rule.join.prefix, rule.message,
                rule.error_class, rule.origin]
    h = hashlib.blake2b(digest_size=16)
    for part in (Path(__file__).read_bytes(), EXCLUSIONS.read_bytes(), json.dumps([SGLANG_RELEASES, read], sort_keys=True).encode()):
        h.update(part + b"\0")
    return h.hexdigest()


def release_wheels(wheels: Sequence[Path]) -> tuple[list[Path], list[str]]:
    """One wheel of each supported release other than the default among `wheels`, and the
    releases none of them is (the site data of a release is written only from its own wheel)."""
    from inkling_compat.inputs.versions import SGLANG_RELEASES

    by_release = {wheel_release(w): w for w in sorted(wheels, reverse=True)}
    wanted = [r for r in SGLANG_RELEASES if r != DEFAULT_RELEASE]
    return [by_release[r] for r in wanted if r in by_release], [r for r in wanted if r not in by_release]


def write_data(wheels: Sequence[Path], base_wheel: Path, path: Path = DATA) -> dict[str, Any]:
    """The site data of each release (inkling_compat/data/sglang-sites.json): per rule and
    release, its site's line, changed message or condition, or null where the release lacks it;
    and the digest of its inputs (`data_inputs`)."""
    base_pins = pins(DEFAULT_RELEASE)
    scope = pinned_scope(base_wheel, base_pins)
    base = read_sites(base_wheel, scope)
    base_audit = check(base, base_pins, load_exclusions(), {p.rule_id for p in base_pins})
    by_release = {}
    for wheel in wheels:
        other = read_sites(wheel, _with_older_rules(scope))
        if other.release != DEFAULT_RELEASE:
            by_release[other.release] = {**rule_sites(base, base_audit, data_pins(base_pins), other), **older_rule_sites(other)}
    releases = sorted(by_release, key=lambda r: tuple(int(x) if x.isdigit() else x for x in r.split(".")))
    ids = sorted({p.rule_id for p in data_pins(base_pins)} | set(older_rule_sites(base)))
    rules = {i: {r: by_release[r][i] for r in releases} for i in ids}
    inputs = data_inputs()
    data = {"baseline": DEFAULT_RELEASE, "releases": releases, "inputs": inputs, "rules": rules}
    text = "{\n" + f'"baseline": {json.dumps(DEFAULT_RELEASE)},\n"releases": {json.dumps(releases)},\n"inputs": {json.dumps(inputs)},\n"rules": {{\n'
    text += ",\n".join(f"{json.dumps(r)}: {json.dumps(v, separators=(',', ':'))}" for r, v in rules.items()) + "\n}\n}\n"
    path.write_text(text, encoding="utf-8")
    return data


DOCS = ROOT / "docs" / "fidelity.md"
START, END = "<!-- audit table: python tests/oracle/audit.py --write-docs -->", "<!-- end of audit table -->"


def write_docs(markdown: str) -> None:
    text = DOCS.read_text(encoding="utf-8")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    DOCS.write_text(head + START + "\n" + markdown + "\n" + END + tail, encoding="utf-8")


def _show(site: Site) -> str:
    return f"{site.path}:{site.line} {site.function} {site.error_class} {site.template!r}"


def audit_release(wheel: Path, base_wheel: Path, as_new: bool = False, out: Any = sys.stdout) -> int:
    """`make audit`: the to-do list for `wheel`'s release, from `base_wheel`'s (0.5.23 unless
    given). Returns the number of problems (the to-do items to fix)."""
    exclusions = load_exclusions()
    data = load_data()
    base_release = wheel_release(base_wheel)
    default_pins = pins(DEFAULT_RELEASE)
    base_pins = pins(base_release, data)
    scope = pinned_scope(find_default_wheel(), default_pins) if base_release != DEFAULT_RELEASE else pinned_scope(base_wheel, default_pins)
    base, other = read_sites(base_wheel, scope), read_sites(wheel, scope)
    base_audit = check(base, base_pins, exclusions, {p.rule_id for p in default_pins}, base_release)
    d = diff(base.sites, other.sites)
    print(f"sglang {other.release} ({wheel.name}) against {base_release}: {len(other.sites)} sites ({len(base.sites)} in "
          f"{base_release}): {len(d.added)} added, {len(d.removed)} removed, {len(d.reworded)} reworded, "
          f"{len(d.moved)} only moved (no problem)", file=out)
    problems = [f"{base_release} itself: {p}" for p in base_audit.problems]
    todo = compare(base, base_audit, other, exclusions, base_release if as_new else None,
                   data, data_pins(base_pins) if base_release == DEFAULT_RELEASE else ())
    from inkling_compat.inputs.versions import SGLANG_VERSIONS

    if not as_new and other.release in SGLANG_VERSIONS and other.release in data["releases"] + [DEFAULT_RELEASE]:
        # Files the site data found a rule's site in (older releases' server_args.py): read for
        # the pins, their other sites not audited.
        moved = {e["path"] for r in data["rules"].values() if isinstance(e := r.get(other.release), dict) and "path" in e}
        own_scan = read_sites(wheel, {**{m: frozenset() for m in moved}, **_with_older_rules(scope)})
        own = check(own_scan, pins(other.release, data), exclusions, {p.rule_id for p in default_pins}, other.release)
        # (a site the to-do list names already is not counted twice)
        listed = {f"{s.path}:{s.line} " for s in d.added} | {f"{b.path}:{b.line} " for _, b in d.reworded}
        problems += [f"{other.release} on its own: {p}" for p in own.problems if not any(p.startswith(x) for x in listed)]
    elif not as_new:
        todo.insert(0, Todo("release", f"{other.release} is not a supported release: add it to "
                            "inkling_compat/inputs/versions.py, then tests/oracle/audit.py --write-data", True))
    problems += [t.text for t in todo if t.problem]
    for kind in ("release", "added", "reworded", "removed", "data", "condition"):
        items = [t for t in todo if t.kind == kind]
        if items:
            print(f"\n{kind} ({len(items)}){'' if items[0].problem else ': to review, not counted'}:", file=out)
            for t in items:
                print("  " + t.text, file=out)
    for problem in problems[:len(problems) - len([t for t in todo if t.problem])]:
        print("  " + problem, file=out)
    print(f"\n{len(problems)} problems", file=out)
    return len(problems)


def find_default_wheel() -> Path:
    sys.path.insert(0, str(ROOT / "tests"))
    from oracle import sglang_sink

    return sglang_sink.find_wheel(download=False)


def cached_wheels() -> list[Path]:
    sys.path.insert(0, str(ROOT / "tests"))
    from oracle import sglang_sink

    return sorted(sglang_sink.cache_dir().glob("sglang-*.whl"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path, nargs="?", help="the sglang wheel of the release to audit")
    parser.add_argument("--table", action="store_true", help="print docs/fidelity.md's table for the 0.5.23 wheel")
    parser.add_argument("--write-docs", action="store_true", help="write that table into docs/fidelity.md")
    parser.add_argument("--against", type=Path, help="the release to compare with (default: the 0.5.23 wheel)")
    parser.add_argument("--as-new", action="store_true", help="treat the wheel's release as new: rules and exclusions as of --against's")
    parser.add_argument("--write-data", action="store_true", help="regenerate inkling_compat/data/sglang-sites.json from the cached wheels")
    parser.add_argument("--if-stale", action="store_true", help="with --write-data: only where its inputs changed (make generate)")
    parser.add_argument("--all", action="store_true", help="audit every cached release; print the problem count of each")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if args.write_data:
        name = DATA.relative_to(ROOT)
        if args.if_stale and load_data().get("inputs") == data_inputs():
            print(f"{name} already current")
            return 0
        wheels, missing = release_wheels(cached_wheels())
        try:
            baseline = find_default_wheel()
        except RuntimeError:  # sglang_sink.WheelUnavailable: no 0.5.23 wheel in the cache
            missing = [DEFAULT_RELEASE, *missing]
        if missing:
            print(f"{name} not written: no wheel of sglang {', '.join(missing)} in the cache (tests/oracle/sglang_sink.py "
                  "cache_dir; docs/fidelity.md says how to fetch them)", file=sys.stderr)
            return 1
        data = write_data(wheels, baseline)
        print(f"{name}: {len(data['rules'])} rules in {', '.join(data['releases'])}")
        return 0
    try:
        baseline = find_default_wheel()
    except RuntimeError as exc:  # sglang_sink.WheelUnavailable
        print(f"no sglang {DEFAULT_RELEASE} wheel: {exc}", file=sys.stderr)
        return 1
    if args.all:
        failed = 0
        for wheel in cached_wheels():
            with open("/dev/null", "w") as sink:
                count = audit_release(wheel, baseline, out=sink)
            print(f"sglang {wheel_release(wheel)}: {count} problems")
            failed += count
        return 1 if failed else 0
    if args.table or args.write_docs or args.wheel is None:
        all_pins = pins()
        scan = read_sites(baseline, pinned_scope(baseline, all_pins))
        audit = check(scan, all_pins, load_exclusions(), {p.rule_id for p in all_pins})
        if args.write_docs:
            write_docs(markdown_table(audit))
        else:
            print(markdown_table(audit))
        for problem in audit.problems:
            print("  " + problem, file=sys.stderr)
        return 1 if audit.problems else 0
    return 1 if audit_release(args.wheel, args.against or baseline, args.as_new) else 0


if __name__ == "__main__":
    raise SystemExit(main())
