"""The list of rules with a machine-applicable fix, by safety, in docs/fixes.md (between its
`<!-- fixes:begin -->` and `<!-- fixes:end -->` markers), generated from the rule files.

    python -m inkling_compat.publish.fixes_doc           # (re)write the list
    python -m inkling_compat.publish.fixes_doc --check   # exit 1 if it is stale
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Sequence

DOC = Path(__file__).resolve().parents[2] / "docs" / "fixes.md"
BEGIN, END = "<!-- fixes:begin -->", "<!-- fixes:end -->"


def fix_list(rules: Sequence[Any] | None = None) -> str:
    """The generated section: per safety, each rule with a fix and what the fix does."""
    if rules is None:
        from inkling_compat.engine.rule_load import load_rules

        rules = load_rules()
    with_fix = sorted((getattr(c, "rule", c) for c in rules if getattr(c, "rule", c).fix is not None), key=lambda r: r.id)
    out = []
    for safety, words in (("safe", "applied by `check --fix`"), ("unsafe", "applied by `check --fix --unsafe-fixes`")):
        chosen = [r for r in with_fix if r.fix.safety == safety]
        out += [f"### {safety.capitalize()} ({len(chosen)} rules; {words})", ""]
        out += [f"- [{r.id}](rules/{r.id}.md): {r.fix.description.strip()}" for r in chosen]
        out += [""]
    return "\n".join(out).rstrip("\n") + "\n"


def rendered(text: str, rules: Sequence[Any] | None = None) -> str:
    """`text` (docs/fixes.md) with the section between the markers regenerated."""
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{fix_list(rules)}{END}{tail}"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    text = DOC.read_text(encoding="utf-8")
    new = rendered(text)
    if "--check" in args:
        if new != text:
            print(f"{DOC} is stale: run python -m inkling_compat.publish.fixes_doc", file=sys.stderr)
            return 1
        return 0
    if new != text:
        DOC.write_text(new, encoding="utf-8")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
