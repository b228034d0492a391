"""Hub ids found in the local Hugging Face cache, offline, as huggingface_hub finds them.

sglang hands a `--model-path` that is not a local folder to transformers, and a `--lora-paths`
entry that is not a local folder to `snapshot_download` (lora/lora_config.py l.79-80, revision
"main"); both take the file from the cache when it holds it. This module answers the same
question without importing huggingface_hub (`file_download` costs ~130 ms at import, a check
must stay fast) by reading the cache's documented layout, exactly as
`huggingface_hub.try_to_load_from_cache` does (tests/test_hf_cache.py holds the two equal):

    <cache>/models--ORG--NAME/refs/<revision>     a commit hash (the file's whole text)
    <cache>/models--ORG--NAME/snapshots/<hash>/   the files of that commit (links into blobs/)
    <cache>/models--ORG--NAME/.no_exist/<hash>/F  F is known not to exist at that commit

The cache is `HF_HUB_CACHE` (or the legacy `HUGGINGFACE_HUB_CACHE`), else `HF_HOME/hub`, else
`$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub` (huggingface_hub/constants.py),
read from the environment sglang would run in: the check's own, with the launch command's
assignments over it. Nothing is downloaded. Hostile caches are bounded: a ref is read only if
it is a regular file, and at most 256 bytes of it (no snapshot name is longer); a snapshot is
found by its name, never by listing the folder; links are followed by the OS (a loop is "not
found").
"""

from __future__ import annotations

import os
import stat
from typing import Mapping

from inkling_compat.sglang.plain_dataclass import dataclass

# huggingface_hub/utils/_validators.py REPO_ID_REGEX, `(\b[\w\-.]{1,96}\b/)?\b[\w\-.]{1,96}\b`
# (ASCII), fully matched, read as what it says of each part: 1 to 96 of these characters,
# the first and the last a word character (plain string tests: no pattern compiled per check).
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_NAME_CHARS = _WORD_CHARS | {"-", "."}
_NAME_MAX = 96
_REF_LIMIT = 256  # a snapshot folder's name is at most 255 bytes: a longer ref names none


@dataclass(frozen=True)
class Found:
    """Where one hub id's file was looked for, and what was found."""

    repo_id: str
    revision: str  # as asked ("main" by default)
    cache: str  # the cache folder looked in
    snapshot: str | None = None  # snapshots/<hash>/ when the file is there
    repo_folder: str | None = None  # models--ORG--NAME (the root the snapshot's links may point into)
    known_absent: bool = False  # .no_exist records that the file is not in that commit

    @property
    def found(self) -> bool:
        return self.snapshot is not None

    def why_not(self, filename: str) -> str:
        """Why the file was not read, in one clause."""
        at = f" at revision {self.revision}" if self.revision != "main" else ""
        if self.known_absent:
            return f"the local Hugging Face cache at {self.cache} records that {self.repo_id}{at} has no {filename}"
        return f"not in the local Hugging Face cache at {self.cache}{at and f' ({self.repo_id}{at})'}"


def is_repo_id(value: str) -> bool:
    """Whether huggingface_hub's `validate_repo_id` accepts `value` ("name" or "org/name")."""
    return (
        value.count("/") <= 1
        and all(_is_name_part(part) for part in value.split("/"))
        and "--" not in value
        and ".." not in value
        and not value.endswith(".git")
    )


def _is_name_part(part: str) -> bool:
    return 0 < len(part) <= _NAME_MAX and part[0] in _WORD_CHARS and part[-1] in _WORD_CHARS and _NAME_CHARS.issuperset(part)


def cache_dir(env: Mapping[str, str] | None = None) -> str:
    """The hub cache folder for this environment (huggingface_hub/constants.py)."""
    env = os.environ if env is None else env
    home = env.get("HF_HOME")
    if home is None:
        home = os.path.join(env.get("XDG_CACHE_HOME", os.path.join(os.path.expanduser("~"), ".cache")), "huggingface")
    home = os.path.expandvars(os.path.expanduser(home))
    legacy = env.get("HUGGINGFACE_HUB_CACHE", os.path.join(home, "hub"))
    return os.path.expandvars(os.path.expanduser(env.get("HF_HUB_CACHE", legacy)))


def repo_folder_name(repo_id: str) -> str:
    """models--ORG--NAME (huggingface_hub's `repo_folder_name` for a model repo)."""
    return "--".join(["models", *repo_id.split("/")])


def lookup(repo_id: str, filename: str, cache: str, revision: str | None = None) -> Found:
    """`filename` of `repo_id` at `revision` in `cache`, as `try_to_load_from_cache` finds it.
    Never raises for the cache's content."""
    revision = "main" if revision is None else revision
    asked = Found(repo_id, revision, cache)
    repo = os.path.join(cache, repo_folder_name(repo_id))
    try:
        if not os.path.isdir(repo):
            return asked
        commit = _ref(os.path.join(repo, "refs"), revision)
        if _is_file(os.path.join(repo, ".no_exist", commit, filename)):
            return Found(repo_id, revision, cache, known_absent=True)
        if not _is_name(commit) or not os.path.lexists(os.path.join(repo, "snapshots", commit)):
            return asked
        snapshot = os.path.join(repo, "snapshots", commit)
        if not os.path.isfile(os.path.join(snapshot, filename)):
            return asked
    except (OSError, ValueError):  # a name the OS refuses (NUL, too long), a permission
        return asked
    return Found(repo_id, revision, cache, snapshot=snapshot, repo_folder=repo)


def _ref(refs: str, revision: str) -> str:
    """The commit a ref names (its file's whole text), or `revision` itself (a commit hash)."""
    path = os.path.join(refs, revision)
    if not os.path.isdir(refs) or not _is_file(path):
        return revision
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # (replaced between the stat and the open)
            return "\0"
        raw = os.read(fd, _REF_LIMIT + 1)
    finally:
        os.close(fd)
    if len(raw) > _REF_LIMIT:
        return "\0"  # names no snapshot (a NUL is in no file name)
    try:
        # Text mode as huggingface_hub reads it: universal newlines.
        return raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError:
        return "\0"


def _is_file(path: str) -> bool:
    try:
        return os.path.isfile(path)
    except (OSError, ValueError):
        return False


def _is_name(commit: str) -> bool:
    """Whether `commit` can be an entry of snapshots/ (os.listdir never lists these)."""
    return commit not in ("", ".", "..") and "/" not in commit and "\0" not in commit
