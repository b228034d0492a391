"""Secrets in the inputs, found so that no output ever echoes them.

A deployment's files hold access tokens beside the settings the checker reads (`HF_TOKEN=hf_...`
before the command, `--api-key sk-...`, a compose file's `environment:`, a manifest's
`env: [{name: HF_TOKEN, value: ...}]`). Whatever a report, a diff or an error line quotes of an
input (a message, an argument, a corrected command) passes through `mask`, in every format.

What is a secret:
* the value of a name whose last word ends in token, key, secret, password or passwd, or with
  any word secret, password or passwd (case-insensitive; words split at `_`, `-`, `.` and
  camelCase): `HF_TOKEN`, `api_key`, `--admin-api-key`, `AWS_SECRET_ACCESS_KEY`, `accessToken`,
  `--ssl-keyfile-password`; not `max_total_tokens`, `--tokenizer-path`, `--ssl-keyfile` or
  `--speculative-token-map` (counts and paths);
  written as `NAME=VALUE`, `NAME: VALUE`, `"NAME": "VALUE"`, `--name VALUE`, `--name=VALUE`,
  or a `name: NAME` / `value: VALUE` pair (Kubernetes `env`);
* anything shaped like a known token, wherever it stands (`TOKEN_SHAPES`: Hugging Face `hf_`,
  OpenAI-style `sk-`, GitHub `ghp_`..., AWS access key ids, Slack `xox?-`).

`mask(text, secrets)` writes each such value as `****` (also as JSON, XML and repr() escape it).
Values shorter than 4 characters, numbers, booleans and null (`KEY=1`, `api_key: true`) are not
masked by value: they would blank every "1" or `true` of a report and break its JSON; the
token shapes still are.
"""

from __future__ import annotations

import functools
import json
import re

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Iterable

MASK = "****"
MIN_LENGTH = 4
_ENDINGS = ("token", "key", "secret", "password", "passwd")
_STRONG = ("secret", "password", "passwd")  # a secret wherever they stand (SECRET_KEY_BASE, ssl_keyfile_password)
TOKEN_SHAPES = (
    r"\bhf_[A-Za-z0-9]{16,}|\bsk-[A-Za-z0-9_\-]{16,}|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bAKIA[0-9A-Z]{16}\b|\bxox[abprs]-[A-Za-z0-9\-]{10,}"
)
# The literal start of each token shape: a text holding none of them holds no token, and the
# pattern is compiled only for one that does.
_TOKEN_STARTS = ("hf_", "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-")


@functools.cache
def _token_shapes() -> re.Pattern[str]:
    return re.compile(TOKEN_SHAPES)


def _upper(c: str) -> bool:
    return "A" <= c <= "Z"


def _lower(c: str) -> bool:
    return "a" <= c <= "z"


def name_words(name: str) -> list[str]:
    """The words of a name, as `re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", name)` finds
    them (ASCII letters and digits; a capital before a small letter starts a word: HTTPServer ->
    HTTP, Server), with string tests: no pattern compiled for the names of every check."""
    words: list[str] = []
    i, n = 0, len(name)
    while i < n:
        c = name[i]
        if _upper(c):
            j = i + 1
            while j < n and _upper(name[j]):
                j += 1
            if j == n or not _lower(name[j]):
                words.append(name[i:j])  # capitals not followed by a small letter
                i = j
                continue
            if j - i >= 2:
                words.append(name[i : j - 1])  # the last capital starts the next word
                i = j - 1
                continue
        if _upper(c) or _lower(c):  # (a capital here is followed by a small letter)
            j = i + 1
            while j < n and _lower(name[j]):
                j += 1
            words.append(name[i:j])
            i = j
        elif "0" <= c <= "9":
            j = i + 1
            while j < n and "0" <= name[j] <= "9":
                j += 1
            words.append(name[i:j])
            i = j
        else:
            i += 1
    return words
_NAME = r"[A-Za-z_][A-Za-z0-9_.\-]*"
_VALUE = r"""(?:"(?P<dq>[^"\n]*)"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s"',}\]#]+))"""
# NAME=VALUE, NAME: VALUE, "NAME": "VALUE" (the name quoted or not)
# (a name starts only where no name character precedes it, and is taken whole: one attempt per
# name, so a long run of letters costs linear time, not one attempt per position)
_ASSIGNED = rf"""(?<![A-Za-z0-9_.\-])(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*+)["']?[ \t]*(?:=|:[ \t])[ \t]*{_VALUE}"""
# --flag VALUE / --flag=VALUE
_FLAG = rf"""(?<!-)--(?P<name>[A-Za-z0-9][A-Za-z0-9_\-]*+)(?:=|[ \t]+\\?\n?[ \t]*){_VALUE}"""
# name: NAME followed by value: VALUE (a Kubernetes env entry), or the other order
_PAIR = rf"""\bname["']?:[ \t]*["']?(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*+)["']?[ \t]*[,\n][ \t-]*["']?value["']?:[ \t]*{_VALUE}"""


@functools.cache
def _assignments() -> tuple[re.Pattern[str], ...]:
    """The three patterns above, compiled on first use: only a line that hints at a secret's


    name is searched with them, and most checks have none."""
    return tuple(re.compile(pattern) for pattern in (_ASSIGNED, _FLAG, _PAIR))


def secret_name(name: str) -> bool:
    """Whether a name (a variable, a key, a flag) holds a secret (see the module doc). A name
    whose lower case holds none of the hints holds none of the words (each word is a run of
    its ASCII letters, lower-cased in place): most of a command's flags are told so, without
    splitting them into words."""
    folded = name.lower()
    if "key" not in folded and "token" not in folded and "secret" not in folded and "passw" not in folded:
        return False
    words = [w.lower() for w in name_words(name)]
    return bool(words) and (words[-1].endswith(_ENDINGS) or any(w.startswith(_STRONG) for w in words))


@functools.cache
def _not_secret() -> re.Pattern[str]:
    return re.compile(r"(?i)(true|false|yes|no|on|off|null|none|~|[-+]?[0-9][0-9_.eE+\-]*)")


def _kept(values: Iterable[str]) -> set[str]:
    """The values that can be masked without blanking ordinary words of a report."""
    return {v for v in values if len(v) >= MIN_LENGTH and not _not_secret().fullmatch(v)}


def _value(match: re.Match[str]) -> str:
    return next(v for v in (match.group("dq"), match.group("sq"), match.group("bare")) if v is not None)


# A line that can name a secret holds one of these, in any case (the value may be on the next line).
_HINTS = ("token", "key", "secret", "passw")


def _hinted(line: str) -> bool:
    """`re.search(r"(?i)token|key|secret|passw", line)`: the characters that pattern takes for
    each letter are those whose lower case is it, and the long s for `s` (tests/test_secrets.py,
    every code point)."""
    folded = line.lower()
    if "\u017f" in folded:
        folded = folded.replace("\u017f", "s")
    return any(hint in folded for hint in _HINTS)


def in_text(text: str) -> set[str]:
    """The secret values written in a file's text (shell, YAML, JSON, a Dockerfile). Only a line
    with a hint of a secret's name, and the line after it, are read: linear in the text."""
    found: set[str] = set()
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not _hinted(line):
            continue
        window = line + "\n" + lines[i + 1] if i + 1 < len(lines) else line
        for pattern in _assignments():
            for match in pattern.finditer(window):
                if secret_name(match.group("name")):
                    found.add(_value(match))
    return _kept(found)


def in_words(words: Iterable[str]) -> set[str]:
    """The secret values among a command's words: `NAME=VALUE`, `--name VALUE`, `--name=VALUE`."""
    found: set[str] = set()
    previous = ""
    for word in words:
        word = str(word)
        if previous.startswith("--") and "=" not in previous and secret_name(previous) and not word.startswith("--"):
            found.add(word)
        name, sep, value = word.partition("=")
        if sep and secret_name(name.lstrip("-")):
            found.add(value)
        previous = word
    return _kept(found)


def in_mapping(values: dict[str, str]) -> set[str]:
    """The secret values of an environment (name -> value)."""
    return _kept(str(v) for k, v in values.items() if secret_name(str(k)))


def _forms(secret: str) -> set[str]:
    """The secret as the formats write it: itself, in JSON, in XML, in repr()."""
    import html  # (only where a secret was found)

    return {secret, json.dumps(secret)[1:-1], html.escape(secret), html.escape(secret, quote=False), repr(secret)[1:-1]}


def mask(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every secret value and every token-shaped word written as `MASK`."""
    forms = sorted({f for s in _kept(secrets) for f in _forms(s) if f}, key=len, reverse=True)
    for form in forms:
        if form in text:
            text = text.replace(form, MASK)
    if any(start in text for start in _TOKEN_STARTS):
        text = _token_shapes().sub(MASK, text)
    return text
