"""The files one check read (`Sources`), and the path an input was given as: what a check keeps
to place its problems later (inputs/source_map.py finds the places, only for a report with
problems)."""

from __future__ import annotations

import os

from inkling_compat.sglang.plain_dataclass import dataclass

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True)
class Sources:
    """The files one check read, as given: None for an input given as a dict or model, or
    not given (a platform preset too); `adapters` one entry per adapter, None for an adapter
    directory or a dict (a directory's files are named by its manifest's `source`)."""

    config: str | None = None
    model: str | None = None
    platform: str | None = None
    adapters: tuple[str | None, ...] = ()
    # A launch command's (dest, file, where) (inputs/launch.Launch.places); config is None then.
    arguments: tuple[tuple[str, str, str], ...] = ()


def path_of(source: Any) -> str | None:
    """The file path an input was given as (str or PathLike), else None."""
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    return None


def model_file(source: Any) -> str | None:
    """The model's config.json as `load_model_config` reads it (a folder: its config.json)."""
    path = path_of(source)
    if path is not None and os.path.isdir(path):
        return os.path.join(path, "config.json")
    return path
