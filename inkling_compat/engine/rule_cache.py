"""Parsed rule files cached on disk, keyed by each file's content, for a fast start.

Parsing the ~135 rule files with libyaml takes about 80 ms of every `inkling-compat` run;
loading their parsed form from one JSON file takes a few. The cache holds plain data only
(what `yaml.safe_load` returns, when it survives a JSON round trip unchanged; anything else
is simply parsed every time), never code, and is keyed by a hash of the file's text, so an
edited rule file is parsed again and validated as usual: the cache changes how fast a file is
read, never what is checked. It is bounded (entries not used by the last process are dropped
beyond MAX_ENTRIES), written atomically at exit, and ignored when unreadable. Location:
$INKLING_COMPAT_CACHE_DIR, else $XDG_CACHE_HOME/inkling-compat, else ~/.cache/inkling-compat;
INKLING_COMPAT_NO_CACHE=1 turns it off.

The second cache, the *rule set* (`rule_set_key`, `load_rule_set`, `store_rule_set`), holds the
expanded data of every rule (families merged, guards written out: what `Rule.model_validate`
receives) after a `load_rules()` that passed every check. Its key hashes the name and text of
every file in the rules folder and the source of the code that decides what is valid (the rule
schema, the guard/family expansion, the path check with the schemas it reads, the facts and input
models, the known versions) and the pydantic and PyYAML versions. A hit saves loading the
definitions, expanding, parsing file by file and the path check; the loader still validates
every rule with pydantic and compiles its CEL, so a rule's logic never comes from the cache.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

MAX_ENTRIES = 1024
_FORMAT = 1
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

RULE_SET_ENTRIES = 8  # rule sets (folders, versions of them) kept; the oldest is dropped
_RULE_SET_FORMAT = 1
# The code that decides whether a rule set is valid, relative to the package folder; any edit misses.
_VALIDITY_CODE = (
    "engine/rules.py", "engine/definitions.py", "engine/paths.py", "engine/rule_cache.py",
    "facts/types.py", "inputs/models.py", "inputs/versions.py",
)  # fmt: skip

_index: dict[str, str] | None = None  # content hash -> the parsed data as JSON text
_used: set[str] = set()
_dirty = False


def enabled() -> bool:
    return os.environ.get("INKLING_COMPAT_NO_CACHE", "") in ("", "0")


def cache_file() -> Path:
    base = os.environ.get("INKLING_COMPAT_CACHE_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(xdg, "inkling-compat")
    return Path(base) / f"rules-v{_FORMAT}-pyyaml{yaml.__version__}.json"


def parse_rule_yaml(path: Path) -> Any:
    """`yaml.safe_load` of the file (raising yaml.YAMLError like it), from the cache when the
    same text was parsed before. Every call returns fresh objects."""
    text = path.read_text(encoding="utf-8")
    if not enabled():
        return yaml.load(text, Loader=_LOADER)  # noqa: S506 - a SafeLoader
    key = hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()
    index = _load_index()
    hit = index.get(key)
    if hit is not None:
        _used.add(key)
        return json.loads(hit)
    data = yaml.load(text, Loader=_LOADER)  # noqa: S506 - a SafeLoader
    _remember(index, key, data)
    return data


def _remember(index: dict[str, str], key: str, data: Any) -> None:
    global _dirty
    try:
        dumped = json.dumps(data, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return  # dates, NaN, ...: not plain JSON, parsed every time
    if json.loads(dumped) != data:  # e.g. integer keys would come back as strings
        return
    index[key] = dumped
    _used.add(key)
    if not _dirty:
        _dirty = True
        atexit.register(_flush)


def _load_index() -> dict[str, str]:
    global _index
    if _index is None:
        try:
            raw = json.loads(cache_file().read_text(encoding="utf-8"))
            _index = {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(raw, dict) else {}
        except (OSError, ValueError):
            _index = {}
    return _index


def _flush() -> None:
    """Write the index atomically; drop entries this process did not use when over the bound."""
    global _dirty
    if not _dirty or _index is None:
        return
    _dirty = False
    entries = _index if len(_index) <= MAX_ENTRIES else {k: v for k, v in _index.items() if k in _used}
    target = cache_file()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=target.name, suffix=".tmp", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(entries, handle, ensure_ascii=False)
        os.replace(tmp, target)
    except OSError:
        try:
            os.unlink(tmp)  # type: ignore[possibly-undefined]
        except (OSError, NameError):
            pass


def clear() -> None:
    """Forget the in-memory index (tests, benchmarks); the file stays."""
    global _index, _dirty
    _index, _dirty = None, False
    _used.clear()


# --- the validated rule set -----------------------------------------------------------------


def _rule_set_file(key: str) -> Path:
    """One file per rule set, so a start reads only its own."""
    return cache_file().with_name(f"rule-sets-v{_RULE_SET_FORMAT}") / f"{key}.json"


_code_digest: str | None = None


def _code_fingerprint() -> str:
    """Hash of the source of `_VALIDITY_CODE`, the schemas the path check reads, the versions
    of pydantic, PyYAML and Python and the CEL library's core (once per process)."""
    global _code_digest
    if _code_digest is None:
        import pydantic

        package = Path(__file__).resolve().parent.parent
        h = hashlib.blake2b(digest_size=16)
        h.update(f"{pydantic.VERSION}|{yaml.__version__}|{sys.version}|{_cel_identity()}".encode())
        from importlib import resources

        schemas = Path(str(resources.files("inkling_compat.schemas")))
        files = [package / name for name in _VALIDITY_CODE] + sorted(schemas.glob("*.json"))
        for path in files:
            h.update(str(path.name).encode() + b"\0")
            try:
                h.update(path.read_bytes())
            except OSError:
                h.update(b"(missing)")
            h.update(b"\0")
        _code_digest = h.hexdigest()
    return _code_digest


def _cel_identity() -> str:
    """The CEL library's compiled core (its file, size and time): a hit skips compiling the guards
    no rule names, which the miss compiled with this library."""
    from inkling_compat.engine import cel

    core = getattr(cel._core, "__file__", None) or repr(cel._core)
    try:
        st = os.stat(core)
    except (OSError, TypeError):
        return str(core)
    return f"{core}|{st.st_size}|{st.st_mtime_ns}"


def rule_set_key(folder: Path) -> str | None:
    """The key of the rules in `folder` (every `*.yaml` below it, names and text) with the code
    that validates them; None when the cache is off."""
    if not enabled():
        return None
    h = hashlib.blake2b(_code_fingerprint().encode(), digest_size=16)
    for relative, path in sorted(_yaml_files(str(folder), "")):
        with open(path, "rb") as handle:
            h.update(relative.encode() + b"\0" + handle.read() + b"\0")
    return h.hexdigest()


def _yaml_files(folder: str, prefix: str) -> list[tuple[str, str]]:
    """(path relative to the rules folder, path) of every `*.yaml` below `folder`."""
    found = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir():
                found += _yaml_files(entry.path, f"{prefix}{entry.name}/")
            elif entry.name.endswith(".yaml"):
                found.append((prefix + entry.name, entry.path))
    return found


def load_rule_set(key: str | None) -> list[tuple[str, dict[str, Any]]] | None:
    """The stored (file name, expanded rule data) of every rule for `key`, or None."""
    if key is None:
        return None
    path = _rule_set_file(key)
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(entry, list):
        return None
    out = []
    for item in entry:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], dict)):
            return None  # not what this module writes: load the rules from their files
        out.append((item[0], item[1]))
    try:
        os.utime(path)  # recently used: the last to be dropped
    except OSError:
        pass
    return out


def store_rule_set(key: str | None, rules: list[tuple[str, dict[str, Any]]]) -> None:
    """Remember the expanded data of a rule set that passed every load-time check (written at
    once, atomically; nothing when the data is not plain JSON or the folder is not writable).
    Beyond RULE_SET_ENTRIES sets, the least recently used are dropped."""
    if key is None:
        return
    entry = [[name, data] for name, data in rules]
    try:
        dumped = json.dumps(entry, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return
    if json.loads(dumped) != entry:
        return  # e.g. integer keys: would not come back the same
    target = _rule_set_file(key)
    _write_atomic(target, dumped)
    try:
        stored = sorted(target.parent.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
        for old in stored[: max(len(stored) - RULE_SET_ENTRIES, 0)]:
            old.unlink()
    except OSError:
        pass  # another process dropped it first


def _write_atomic(target: Path, text: str) -> None:
    tmp = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=target.name, suffix=".tmp", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except OSError:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
