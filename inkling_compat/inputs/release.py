"""Which sglang release a check is for, and why: given, installed, pinned, in an image tag, or the newest.

In this order (the first that says a release wins):

1. given (`--sglang-version`, `check(..., sglang_version=)`);
2. the `sglang` distribution installed in this environment (its metadata on sys.path, found
   as importlib.metadata finds it: sglang itself is never imported);
3. a pinned requirement (`sglang==X`, `sglang[all]==X`) in a `requirements*.txt` or
   `pyproject.toml` beside the deployment file or in a folder above it up to the repository's
   root (the first folder holding `.git`; outside a repository, beside it only);
4. an sglang image tag in the deployment file itself (`lmsysorg/sglang:v0.5.22`,
   `lmsysorg/sglang:v0.5.22-cu126`);
5. else the newest supported release.

A release found or given that the checker does not know is an InputError naming it, where it
was found, and the supported range (exit 2). `Release.reason` is what the report prints:
"from the image tag in deploy.yaml:14"; `Release.text()`: "sglang 0.5.22 (from the image tag in
deploy.yaml:14)".
"""

from __future__ import annotations

import functools
import os
import re
import sys
from stat import S_ISREG

from inkling_compat.inputs.versions import (
    SGLANG_DEFAULT_VERSION,
    SGLANG_VERSIONS,
    supported_text,
)
from inkling_compat.sglang.plain_dataclass import dataclass

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any


class _Pattern:
    """A case-insensitive pattern searched only in a line that holds its literal parts
    (`needles`, compared case-folded: every line the pattern matches holds them), and compiled
    when a line first does: most deployment files hold neither a pin nor an image tag."""

    def __init__(self, needles: tuple[str, ...], pattern: str) -> None:
        self.needles, self.pattern = needles, pattern

    def search(self, line: str) -> re.Match[str] | None:
        folded = line.casefold()
        if not all(needle in folded for needle in self.needles):
            return None
        return _compiled(self.pattern).search(line)


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# A pinned requirement: PEP 508 name `sglang`, optional extras, `==` (or `===`) and a version.
_PIN = _Pattern(("sglang", "=="), r"""(?<![\w.-])sglang\s*(?:\[[^\]\n]{0,200}\])?\s*===?\s*v?([0-9][0-9A-Za-z.+!-]{0,40})""")
# An sglang image: `lmsysorg/sglang:v0.5.22` (optionally a registry in front, a suffix after).
_IMAGE = _Pattern(("lmsysorg/sglang:",), r"""(?<![\w.-])(?:[\w.-]+(?::\d+)?/)?lmsysorg/sglang:v?([0-9]+\.[0-9]+\.[0-9]+(?:\.post[0-9]+)?)""")

MAX_READ = 1 << 20  # a requirements file or deployment file read for a pin or a tag (bytes)
MAX_LEVELS = 16  # folders above the deployment file looked in


NEWEST = "the newest supported: none installed, pinned or in an image tag"


@dataclass(frozen=True)
class Release:
    version: str
    reason: str  # "from --sglang-version", "from the image tag in deploy.yaml:14", NEWEST, ...

    def text(self) -> str:
        return f"sglang {self.version} ({self.reason})"


def find_release(given: str | None = None, deployment: Any = None, given_by: str = "sglang_version=") -> Release:
    """The release a check of `deployment` (a path, or anything else: then no file is read) is for."""
    if given is not None:
        return _known(Release(str(given), f"from {given_by}"))
    for found in (_installed(), *_from_files(deployment)):
        if found is not None:
            return _known(found)
    return Release(SGLANG_DEFAULT_VERSION, NEWEST)


def _known(release: Release) -> Release:
    from inkling_compat.errors import InputError

    version = release.version
    if version.startswith("v") and version[1:] in SGLANG_VERSIONS:
        version = version[1:]
    if version not in SGLANG_VERSIONS:
        where = release.reason.removeprefix("from ")
        if where.startswith("--"):
            file, field = "(command line)", where
        elif where.startswith("the "):
            file, field = where, "sglang"
        else:
            file, field = "<sglang_version>", "sglang_version"
        shown = release.version if len(release.version) <= 60 else release.version[:60] + "..."
        raise InputError(file, field, f"sglang {shown!r} is not supported: supported are {supported_text()}")
    return Release(version, release.reason)


@functools.lru_cache(maxsize=1)
def _installed() -> Release | None:
    """The installed sglang's version, as `importlib.metadata.version("sglang")` finds it (the
    first `sglang-*.dist-info` / `.egg-info` on sys.path), read from its folder directly:
    importing importlib.metadata (email, zipfile, csv) costs more than the rest of a check's
    start. (Once per process: a check does not install packages.)"""
    try:
        version = _distribution_version("sglang")
    except (OSError, ValueError, UnicodeError):
        version = None
    return Release(version, "from the installed sglang distribution") if version else None


def _distribution_version(name: str) -> str | None:
    """The Version of the first distribution `name` on sys.path (names compared as PEP 503
    normalizes them, as importlib.metadata compares them)."""
    wanted = normalized_name(name)
    for folder in sys.path:
        try:
            entries = _listing(folder)
        except (OSError, TypeError, ValueError):
            continue
        for entry in sorted(e for e in entries if e.endswith((".dist-info", ".egg-info"))):
            stem, dot, suffix = entry.rpartition(".")
            if normalized_name(stem.partition("-")[0]) != wanted:
                continue
            path = os.path.join(folder or ".", entry)
            meta = os.path.join(path, "METADATA" if suffix == "dist-info" else "PKG-INFO") if os.path.isdir(path) else path
            try:
                with open(meta, encoding="utf-8", errors="replace") as handle:
                    for line in handle:
                        if line.startswith("Version:"):
                            return line.partition(":")[2].strip()
                        if not line.strip():
                            break  # the headers end
            except OSError:
                continue
    return None


def _listing(folder: str) -> Any:
    """`os.listdir(folder or ".")`'s names, taken from the import system's finder of the folder
    where it holds them (`sys.path_importer_cache`: the folders of sys.path are listed by the
    imports that ran before the check) and they are current as it judges it (the folder's
    modification time is the one it listed it at: it lists it again otherwise, as this does):
    listing sys.path's folders again cost about half a millisecond of a check's start. Names
    as listed (not on Windows, where the finder lower-cases suffixes)."""
    finder = sys.path_importer_cache.get(folder) if folder and not sys.platform.startswith(("win", "cygwin")) else None
    names, listed = getattr(finder, "_path_cache", None), getattr(finder, "_path_mtime", None)
    if type(names) is set and type(listed) is float and listed != -1 and os.stat(folder).st_mtime == listed:
        return names
    return os.listdir(folder or ".")


def normalized_name(name: str) -> str:
    """A distribution name as PEP 503 compares it (`re.sub(r"[-_.]+", "_", name).lower()`: each
    run of `-`, `_` and `.` one `_`), with string methods: no pattern compiled for every check."""
    text = name.replace("-", "_").replace(".", "_")
    while "__" in text:
        text = text.replace("__", "_")
    return text.lower()


def _from_files(deployment: Any) -> list[Release | None]:
    if not isinstance(deployment, (str, os.PathLike)):
        return []
    path = os.fspath(deployment)
    if isinstance(path, bytes) or path in ("", "-") or "\0" in path:
        return []
    return [_pinned(path), _search(path, _IMAGE, "the image tag in")]


def _pinned(deployment: str) -> Release | None:
    for folder in _folders(deployment):
        for name in _candidates(folder):
            found = _search(os.path.join(folder, name), _PIN, "the pinned requirement in")
            if found is not None:
                return found
    return None


def _folders(deployment: str) -> list[str]:
    """The deployment file's folder, then the folders above it up to its repository's root
    (the first holding `.git`); outside a repository its own folder only (a pin in /tmp or a
    home folder says nothing about this deployment). (Plain strings and os.path: this runs on
    every check.)"""
    chain = [os.path.dirname(os.path.abspath(deployment))]
    for _ in range(MAX_LEVELS):
        if os.path.exists(os.path.join(chain[-1], ".git")):
            return chain
        parent = os.path.dirname(chain[-1])
        if parent == chain[-1]:
            break
        chain.append(parent)
    return chain[:1]


def _candidates(folder: str) -> tuple[str, ...]:
    """The requirements files and pyproject.toml of a folder (its listing remembered while the
    folder's modification time stays: a file added or removed changes it)."""
    try:
        key = (folder, os.stat(folder).st_mtime_ns)
    except OSError:
        return ()
    hit = _LISTINGS.get(key)
    if hit is None:
        try:
            names = sorted(n for n in os.listdir(folder) if n == "pyproject.toml" or (n.startswith("requirements") and n.endswith(".txt")))
        except OSError:
            names = []
        hit = tuple(n for n in names if os.path.isfile(os.path.join(folder, n)))  # (as DirEntry.is_file: links followed)
        _remember(_LISTINGS, key, hit)
    return hit


_LISTINGS: dict[tuple[str, int], tuple[str, ...]] = {}
_SEARCHES: dict[tuple[str, str, int, int], Release | None] = {}
MAX_REMEMBERED = 1024


def _remember(memo: dict, key: object, value: object) -> None:  # type: ignore[type-arg]
    if len(memo) >= MAX_REMEMBERED:
        memo.clear()
    memo[key] = value


def _search(path: str, pattern: _Pattern, what: str) -> Release | None:
    """The first uncommented line of the file `pattern` matches (remembered per file version:
    path, modification time and size)."""
    try:
        stat = os.stat(path)
    except (OSError, ValueError):
        return None
    if not S_ISREG(stat.st_mode):  # (a FIFO or device is never opened: it could block or never end)
        return None
    key = (path, pattern.pattern, stat.st_mtime_ns, stat.st_size)
    if key in _SEARCHES:
        return _SEARCHES[key]
    found = _search_text(path, pattern, what)
    _remember(_SEARCHES, key, found)
    return found


def _search_text(path: str, pattern: _Pattern, what: str) -> Release | None:
    try:
        with open(path, "rb") as handle:
            text = handle.read(MAX_READ).decode("utf-8", errors="replace")
    except OSError:
        return None
    folded = text.casefold()  # (a line the pattern matches holds its needles: so does the text)
    if not all(needle in folded for needle in pattern.needles):
        return None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if stripped.startswith("#"):
            continue
        match = pattern.search(line)
        if match:
            return Release(match.group(1), f"from {what} {os.path.basename(path)}:{number}")
    return None
