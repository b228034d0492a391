"""The --lora-paths entries of a check by the directory each names, for finding an adapter
directory's entry with one stat (inputs/adapter_dir.py reads the directories; a check that reads
none, a launch whose adapters are not local, needs only this index, not the reader)."""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from inkling_compat.inputs.models import LoraRef


class LoraPathIndex:
    """The --lora-paths entries by the directory they name (its device and inode: the same
    folder whatever the path), built once per check on first use: looking each adapter up
    in it costs one stat, whatever the number of entries. It also holds the real paths of the
    folders the check's adapter directories sit in (`folders`), found once per check."""

    def __init__(self, entries: list[LoraRef] | None):
        self.entries = entries or []
        self._index: dict[tuple[int, int], LoraRef] | None = None
        self.folders: dict[str, str] = {}

    def get(self, directory: str) -> LoraRef | None:
        if not self.entries:
            return None  # (no stat without --lora-paths)
        if self._index is None:
            self._index = {}
            for entry in self.entries:
                key = _dir_key(entry.path)
                if key is not None:
                    self._index.setdefault(key, entry)
        key = _dir_key(directory)
        return None if key is None else self._index.get(key)


def _dir_key(path: str) -> tuple[int, int] | None:
    """(device, inode) of the directory `path` leads to (links followed), None if it is none."""
    try:
        st = os.stat(path)
    except (OSError, ValueError, TypeError):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None
