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
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

MAX_ENTRIES = 1024
_FORMAT = 1
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

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
