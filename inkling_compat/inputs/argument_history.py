"""What the releases' argument tables say about an argparse refusal: which releases know a flag
or a choice, which release added it, and what replaced a flag that was removed or renamed.

`explain` adds these notes to an error text's explanation (cli.py): sglang's "unrecognized
arguments: --max-loaded-loras" from an older sglang says which release adds the flag; one for a
flag a later release removed says its replacement; "argument --lora-backend: invalid choice:
'triton_v2'" says which releases accept the value. Every fact comes from the tables
(inputs/argument_table.py, one per release, generated from the wheels); each is read only here,
when an explained text names an argument.
"""

from __future__ import annotations

import re
from typing import Any

from inkling_compat.inputs import argument_table
from inkling_compat.inputs.versions import SGLANG_RELEASES
from inkling_compat.sglang.plain_dataclass import dataclass

# sglang's argparse words (Python's own messages): one search per line, no backtracking over
# a long line (each pattern is a literal followed by a bounded or a negated class).
_UNRECOGNIZED = re.compile(r"unrecognized arguments: ([^\n]{1,4000})")
_INVALID_CHOICE = re.compile(r"argument (--[\w-]{1,200})(?:/[^:\n]{0,400})?: invalid choice: '([^'\n]{0,400})'")
_FLAG = re.compile(r"--[\w-]{1,200}")
MAX_NOTES = 20  # per text: a log of thousands of refusals is explained by its first ones


@dataclass(frozen=True)
class FlagHistory:
    option: str
    releases: tuple[str, ...]  # the supported releases whose parser knows the option, newest first
    replacement: str  # the flag the newest release without it uses instead ("" if none)
    retired: str = ""  # the last release's own refusal of it, where it had one

    def note(self) -> str:
        if not self.releases:
            return f"{self.option} is not an argument of any supported sglang release ({_span(SGLANG_RELEASES)})"
        if self.releases == SGLANG_RELEASES:
            return (
                f"{self.option} is an argument of every supported sglang release ({_span(SGLANG_RELEASES)}): "
                f"the sglang that refused it is older than {SGLANG_RELEASES[-1]}; upgrade sglang"
            )
        text = f"{self.option} is an argument of sglang {_span(self.releases)} only"
        missing = [r for r in SGLANG_RELEASES if r not in self.releases]
        older = [r for r in missing if _key(r) < _key(self.releases[-1])]
        newer = [r for r in missing if _key(r) > _key(self.releases[0])]
        if older:
            text += f"; added in {self.releases[-1]}: on sglang {_span(tuple(older))} upgrade, or leave it out"
        if newer:
            text += f"; removed in {newer[-1]}"
            if self.retired:
                text += f" (sglang {self.releases[0]} says: {self.retired})"
            else:
                text += f": use {self.replacement} instead" if self.replacement else " (no replacement in its arguments)"
        return text


def flag_history(option: str) -> FlagHistory:
    releases = tuple(r for r in SGLANG_RELEASES if _row(r, option) is not None)
    last = _row(releases[0], option) if releases else None
    return FlagHistory(option, releases, _replacement(option, releases), str((last or {}).get("error_message") or ""))


def choice_note(option: str, value: str) -> str | None:
    """Which releases accept `value` for `option`, when not all that know the option do."""
    knowing = [r for r in SGLANG_RELEASES if _row(r, option) is not None]
    accepting = tuple(r for r in knowing if value in _choices(_row(r, option)))
    if not knowing or len(accepting) == len(knowing):
        return None
    if not accepting:
        return f"{value!r} is not a choice of {option} in any supported sglang release ({_span(SGLANG_RELEASES)})"
    refusing = tuple(r for r in knowing if r not in accepting)
    offered = ", ".join(map(repr, _choices(_row(refusing[0], option))))
    return f"{value!r} is a choice of {option} in sglang {_span(accepting)} only; sglang {_span(refusing)} offers {offered}"


def notes(text: str) -> list[str]:
    """The release notes for every argparse refusal the text holds, each once, in order."""
    out: list[str] = []
    for line in text.splitlines():
        if len(out) >= MAX_NOTES:
            break
        if "unrecognized arguments:" in line:
            match = _UNRECOGNIZED.search(line)
            for word in _FLAG.findall(match.group(1)) if match else ():
                out.append(flag_history(word.split("=", 1)[0]).note())
        if "invalid choice:" in line:
            match = _INVALID_CHOICE.search(line)
            note = choice_note(match.group(1), match.group(2)) if match else None
            if note:
                out.append(note)
    return list(dict.fromkeys(out))[:MAX_NOTES]


def rule_releases_note(versions: Any) -> str | None:
    """For a rule that exists in some releases only (its `sglang_versions` and variants)."""
    present = tuple(r for r in SGLANG_RELEASES if r in set(versions))
    if not present or present == SGLANG_RELEASES:
        return None
    return f"this error is raised by sglang {_span(present)} only (not by {_span(tuple(r for r in SGLANG_RELEASES if r not in present))})"


# --- the tables ------------------------------------------------------------------------------


def _row(release: str, option: str) -> dict[str, Any] | None:
    for row in argument_table.table(release)["arguments"]:
        if option in row["options"]:
            return row
    return None


def _choices(row: dict[str, Any] | None) -> list[Any]:
    choices = (row or {}).get("choices") or []
    return list(choices["set"]) if isinstance(choices, dict) else list(choices)


def _replacement(option: str, releases: tuple[str, ...]) -> str:
    """What replaces an option the newest release lacks: the last release that had it names it
    (a deprecated flag's `new_flag`, a retired flag's message), or the newest release spells
    the same dest with another option (a rename)."""
    if not releases or releases[0] == SGLANG_RELEASES[0]:
        return ""
    last = _row(releases[0], option) or {}
    if last.get("new_flag"):
        return str(last["new_flag"])
    for row in argument_table.table(SGLANG_RELEASES[0])["arguments"]:
        if row["dest"] == last.get("dest") and row["options"]:
            return row["options"][0]
    return ""


def _key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


def _span(releases: tuple[str, ...]) -> str:
    """Newest-first releases in words: one, a contiguous range, or a list."""
    ordered = sorted(releases, key=_key)
    if len(ordered) == 1:
        return ordered[0]
    indexes = [SGLANG_RELEASES.index(r) for r in ordered]
    if indexes == list(range(indexes[0], indexes[0] - len(indexes), -1)):
        return f"{ordered[0]} to {ordered[-1]}"
    return ", ".join(ordered)
