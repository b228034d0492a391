"""The raise-site audit: every `raise` and `assert` sglang has on an Inkling LoRA deployment's path.

It reads the audited files' source out of an sglang wheel (`AUDITED`: models/inkling.py,
models/inkling_common/**, lora/**, the LoRA argument hooks under arg_groups/) and lists, with
`ast`, every raise statement and every assert (`Site`: path, line, function, exception class,
message template; an f-string becomes a template with `{expression}` holes). Each site must be
either covered by a rule (the rule's pinned `source.path` and `source.line` fall on the site's
statement, and the site's message template reads in the rule's message) or listed in the
exclusions file (tests/data/audit_exclusions.yaml) with a category and a one-line reason.
`check` says what does not hold; `diff` compares two wheels' sites (what `make audit` prints:
the first step of supporting another sglang release).

The code lives with the test oracles, not in the package: it reads sglang's wheel, which the
checker itself never needs, and the package must not depend on a wheel being present.

    python tests/oracle/audit.py WHEEL [--against WHEEL_0.5.23]   # what changed (make audit)
    python tests/oracle/audit.py --table                          # docs/fidelity.md's table
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

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

    @property
    def file(self) -> str:
        return self.path.split("/sglang/srt/", 1)[1]


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


def sites_of(source: str, path: str) -> list[Site]:
    """Every raise and assert of one file, in line order, with the function it is in."""
    found: list[Site] = []
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

    def visit(node: ast.AST, scope: tuple[str, ...], lines: tuple[int, int]) -> None:
        for child in ast.iter_child_nodes(node):
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
            found.append(Site(path, child.lineno, end, _check_line(child, parents), function, lines, error_class, template))
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
    kind: str  # "log" | "function"
    name: str  # the function's qualified name, or the log call
    template: str


_LOG_CALLS = ("warning", "warning_once", "warn", "error", "info", "info_once", "print_warning_once")


def anchors_of(source: str, path: str) -> list[Anchor]:
    found: list[Anchor] = []

    def visit(node: ast.AST, scope: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = scope + (child.name,)
                if not isinstance(child, ast.ClassDef):
                    found.append(Anchor(path, child.lineno, child.end_lineno or child.lineno, "function", ".".join(inner), ""))
            if (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Attribute)
                and child.func.attr in _LOG_CALLS
                and child.args
            ):
                found.append(Anchor(path, child.lineno, child.end_lineno or child.lineno, "log", ast.unparse(child.func), _template(child.args[0])))
            visit(child, inner)

    visit(ast.parse(source), ())
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


def read_sites(wheel: Path) -> Scan:
    """Every audited site of a wheel, and the other lines a rule may pin."""
    sites: list[Site] = []
    anchors: list[Anchor] = []
    with zipfile.ZipFile(wheel) as archive:
        for name, words in audited_files(archive.namelist()):
            source = archive.read(name).decode("utf-8")
            for site in sites_of(source, "python/" + name):
                if not words or any(w in site.template.lower() for w in words):
                    sites.append(site)
            anchors.extend(anchors_of(source, "python/" + name))
    return Scan(tuple(sites), tuple(anchors))


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


def pins(version: str = "0.5.23") -> list[Pin]:
    """Every rule's pinned source for one sglang version (a variant's source where it has one)."""
    from inkling_compat.engine.rules import load_rules

    found = []
    for compiled in load_rules():
        rule = compiled.for_version(version)
        if rule is None:
            continue
        source = rule.rule.source
        if source is not None and source.line is not None:
            # A joined raise ("ineligible: {a}; {b}") reads as the join's prefix and the message.
            message = (rule.rule.join.prefix if rule.rule.join else "") + rule.rule.message
            found.append(Pin(rule.rule.id, source.path, source.line, message, source.function,
                             rule.rule.error_class, rule.rule.origin == "derived"))
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
    path: str
    line: int
    error_class: str
    message: str
    category: str
    reason: str


def load_exclusions(path: Path = EXCLUSIONS) -> list[Exclusion]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    found = []
    for file, entries in (data.get("files") or {}).items():
        for entry in entries:
            found.append(
                Exclusion(file, int(entry["line"]), entry["class"], entry.get("message", ""), entry["category"], entry["reason"])
            )
    return found


def _excludes(exclusion: Exclusion, site: Site) -> bool:
    return (
        exclusion.path == site.path
        and exclusion.line == site.line
        and exclusion.error_class == site.error_class
        and exclusion.message == site.template
    )


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


def check(scan: Scan, all_pins: Sequence[Pin], exclusions: Sequence[Exclusion], rule_ids: set[str]) -> Audit:
    sites = scan.sites
    problems: list[str] = []
    verdicts = []
    used: set[Exclusion] = set()
    for site in sites:
        rules = tuple(sorted({p.rule_id for p in covering(site, all_pins)}))
        matched = [e for e in exclusions if _excludes(e, site)]
        used.update(matched)
        where = f"{site.path}:{site.line} {site.error_class} {site.template!r}"
        if rules and matched:
            problems.append(f"{where}: covered by {', '.join(rules)} and also excluded ({matched[0].category})")
        if len(matched) > 1:
            problems.append(f"{where}: excluded {len(matched)} times")
        if not rules and not matched:
            problems.append(f"{where} ({site.function}): neither covered by a rule nor excluded")
        verdicts.append(Verdict(site, rules, matched[0].category if matched else None))
    for exclusion in exclusions:
        if exclusion not in used:
            problems.append(
                f"exclusion {exclusion.path}:{exclusion.line} {exclusion.error_class} {exclusion.message!r}: no such site"
            )
        category = exclusion.category
        if category.startswith(UNREACHABLE):
            if category[len(UNREACHABLE):] not in rule_ids:
                problems.append(f"exclusion {exclusion.path}:{exclusion.line}: {category}: no such rule")
        elif category not in CATEGORIES:
            problems.append(f"exclusion {exclusion.path}:{exclusion.line}: unknown category {category!r}")
        if not exclusion.reason.strip():
            problems.append(f"exclusion {exclusion.path}:{exclusion.line}: no reason")
    # A pin into an audited file must still hold what the rule says: the raise with its message,
    # the logged warning with its text, or (a Python or torch error inside a call) a line of
    # the function the rule names.
    audited = {a.path for a in scan.anchors}
    for pin in all_pins:
        if pin.path not in audited:
            continue
        if any(pin.rule_id in v.rules for v in verdicts):
            continue
        where = f"rule {pin.rule_id}: {pin.path}:{pin.line}"
        on_site = [
            s for s in sites
            if s.path == pin.path and s.check_line <= pin.line <= s.end_line and not pin.derived and _same_class(s, pin)
        ]
        logs = [a for a in scan.anchors if a.kind == "log" and a.path == pin.path and a.first <= pin.line <= a.last]
        functions = [a for a in scan.anchors if a.kind == "function" and a.path == pin.path and a.first <= pin.line <= a.last]
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


# --- two wheels ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Diff:
    added: tuple[Site, ...]
    removed: tuple[Site, ...]
    moved: tuple[tuple[Site, Site], ...]  # (old, new): same function, class and message, another line
    reworded: tuple[tuple[Site, Site], ...]  # (old, new): same function and class, another message


def diff(old: Sequence[Site], new: Sequence[Site]) -> Diff:
    def key(s: Site) -> tuple[str, str, str, str]:
        return (s.path, s.function, s.error_class, s.template)

    left, right = list(old), list(new)
    moved = []
    unchanged = 0
    for site in list(left):
        same = next((n for n in right if key(n) == key(site)), None)
        if same is None:
            continue
        left.remove(site)
        right.remove(same)
        if same.line != site.line:
            moved.append((site, same))
        else:
            unchanged += 1
    reworded = []
    for site in list(left):
        other = next((n for n in right if key(n)[:3] == key(site)[:3]), None)
        if other is not None:
            left.remove(site)
            right.remove(other)
            reworded.append((site, other))
    return Diff(tuple(right), tuple(left), tuple(moved), tuple(reworded))


DOCS = ROOT / "docs" / "fidelity.md"
START, END = "<!-- audit table: python tests/oracle/audit.py --write-docs -->", "<!-- end of audit table -->"


def write_docs(markdown: str) -> None:
    text = DOCS.read_text(encoding="utf-8")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    DOCS.write_text(head + START + "\n" + markdown + "\n" + END + tail, encoding="utf-8")


def _show(site: Site) -> str:
    return f"{site.path}:{site.line} {site.function} {site.error_class} {site.template!r}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path, nargs="?", help="the sglang wheel to compare with 0.5.23's")
    parser.add_argument("--table", action="store_true", help="print docs/fidelity.md's table for the 0.5.23 wheel")
    parser.add_argument("--write-docs", action="store_true", help="write that table into docs/fidelity.md")
    parser.add_argument("--against", type=Path, help="the sglang 0.5.23 wheel (default: the one the tests use)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tests"))
    sys.path.insert(0, str(ROOT))
    from oracle import sglang_sink

    baseline = args.against or sglang_sink.find_wheel(download=False)
    if args.table or args.write_docs or args.wheel is None:
        scan = read_sites(baseline)
        all_pins = pins()
        audit = check(scan, all_pins, load_exclusions(), {p.rule_id for p in all_pins})
        if args.write_docs:
            write_docs(markdown_table(audit))
        else:
            print(markdown_table(audit))
        for problem in audit.problems:
            print("  " + problem, file=sys.stderr)
        return 1 if audit.problems else 0
    old_scan, new_scan = read_sites(baseline), read_sites(args.wheel)
    old, new = old_scan.sites, new_scan.sites
    d = diff(old, new)
    print(f"{args.wheel.name} against {baseline.name}: {len(new)} sites ({len(old)} before)")
    for title, items in (("added", d.added), ("removed", d.removed)):
        print(f"\n{title} ({len(items)}):")
        for site in items:
            print("  " + _show(site))
    for title, pairs in (("moved", d.moved), ("reworded", d.reworded)):
        print(f"\n{title} ({len(pairs)}):")
        for before, after in pairs:
            print(f"  {_show(before)}\n    -> line {after.line}: {after.template!r}")
    audit = check(new_scan, pins(), load_exclusions(), {p.rule_id for p in pins()})
    print(f"\nagainst the rules and exclusions (pinned to 0.5.23): {len(audit.problems)} problems")
    for problem in audit.problems:
        print("  " + problem)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
