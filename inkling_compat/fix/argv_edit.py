"""A fix's edits made to a launch command (`python -m sglang.launch_server --max-lora-rank 8 ...`)
as a pure function over its tokens: `--flag value`, `--flag=value`, store_true flags
(`--enable-lora`) and nargs='+' lists (`--lora-target-modules a b`), spelt with dashes or
underscores (`--max_lora_rank`), are found and changed where they stand; the other tokens are
left as they are. A flag that is not there is appended, dash-spelt, as sglang's --help spells it.

What a flag takes is the caller's to say (`arity`: key -> "flag" | "one" | "many"; sglang's
argument table knows): a bool value is taken for a store_true flag where the table does not
say. `env.*` edits are environment variables, not arguments: they are returned unapplied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

FLAG, ONE, MANY = "flag", "one", "many"


@dataclass(frozen=True)
class ArgvResult:
    """The edited tokens, and the edits that are not arguments (environment switches) or
    could not be made, each with the reason."""

    tokens: tuple[str, ...]
    skipped: tuple[tuple[Any, str], ...] = ()


def edit_argv(tokens: Sequence[str], edits: Sequence[Any], arity: Mapping[str, str] | None = None) -> ArgvResult:
    """`tokens` (the launch command after the program, or all of it) with `edits` made
    (fix/plan.Edit: kind set/remove/rename, key, value, to)."""
    out = list(tokens)
    skipped: list[tuple[Any, str]] = []
    arity = dict(arity or {})
    for edit in edits:
        if edit.key.startswith("env."):
            skipped.append((edit, f"{edit.key[4:]} is an environment variable: set it in the launch environment"))
            continue
        kind = arity.get(edit.key) or _guess(edit.value)
        spans = _find(out, edit.key, arity.get(edit.key))
        if len(spans) > 1:
            skipped.append((edit, f"--{_dash(edit.key)} is given {len(spans)} times"))
            continue
        span = spans[0] if spans else None
        if edit.kind == "remove":
            if span is not None:
                del out[span[0] : span[1]]
        elif edit.kind == "rename":
            if span is None:
                continue
            if _find(out, edit.to or "", None):
                skipped.append((edit, f"--{_dash(edit.to or '')} is given too: keep one by hand"))
                continue
            head = out[span[0]]
            name, eq, rest = head.partition("=")
            out[span[0]] = _spell(edit.to or "", name) + (eq + rest if eq else "")
        else:
            new = _tokens(edit.key, edit.value, kind, out[span[0]] if span is not None else None)
            if span is None:
                out.extend(new)
            else:
                out[span[0] : span[1]] = new
    return ArgvResult(tuple(out), tuple(skipped))


def _guess(value: Any) -> str:
    if isinstance(value, bool):
        return FLAG
    if isinstance(value, list):
        return MANY
    return ONE


def _dash(key: str) -> str:
    return key.replace("_", "-")


def _normal(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def _find(tokens: list[str], key: str, kind: str | None) -> list[tuple[int, int]]:
    """(start, end) of each occurrence of `--key` with its values in `tokens`."""
    spans = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token == "--":
            break
        if token.startswith("--") and _same(_normal(token.partition("=")[0]), key):
            end = index + 1
            if "=" not in token:
                if kind == MANY or (kind is None and _takes_many(tokens, index)):
                    while end < len(tokens) and not tokens[end].startswith("--"):
                        end += 1
                elif kind != FLAG and end < len(tokens) and not tokens[end].startswith("--"):
                    end += 1
            spans.append((index, end))
            index = end
            continue
        index += 1
    return spans


def _same(flag: str, key: str) -> bool:
    from inkling_compat.fix.keys import same

    return flag == key or same(flag, key)


def _takes_many(tokens: list[str], index: int) -> bool:
    """Without the argument table: a flag followed by more than one non-flag token reads them all."""
    following = 0
    for token in tokens[index + 1 :]:
        if token.startswith("--"):
            break
        following += 1
    return following > 1


def _spell(key: str, like: str | None) -> str:
    """`--key` spelt as the flag it replaces was (underscores if that one used them)."""
    from inkling_compat.fix.keys import new_name

    if like is not None and "_" in like.lstrip("-") and "-" not in like.lstrip("-"):
        return "--" + new_name(key, False)
    return "--" + new_name(key, True)


def _tokens(key: str, value: Any, kind: str, old: str | None) -> list[str]:
    name = _spell(key, old.partition("=")[0] if old else None)
    if kind == FLAG:
        return [name] if value else []
    values = [_text(v) for v in value] if isinstance(value, list) else [_text(value)]
    if old is not None and "=" in old and len(values) == 1:
        return [f"{name}={values[0]}"]
    return [name, *values]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
