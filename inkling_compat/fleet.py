"""Fleet checks: every adapter directory of one or more folders, plus the cross-adapter rules.

`check_fleet(config, ["adapters/"], model=...)` reads each subdirectory of each folder with
`adapter_reader` (headers only; a broken adapter becomes an `adapter-file-unreadable`
problem of that adapter, the others are still checked) and runs one `check()` over all of
them, so the global rules are evaluated once, the adapter rules once per adapter and the
cross-adapter rules (duplicate names, mixed shared-outer layouts, --max-loaded-loras,
pinned slots) over the whole fleet. `Report.by_adapter()` groups the result.

Unusable input (a folder that does not exist, is not a directory, cannot be listed or holds
no adapter directory) raises `InputError` (exit 2 in the CLI).

An adapter directory is always a problem of that adapter, never the fleet's end: the reader
turns whatever it finds into a manifest, and should checking the fleet still fail inside
inkling-compat (a defect), each directory adapter is checked alone to find the ones that
fail; those are reported as `adapter-file-unreadable` with the defect's text (so it is seen
and can be reported), and the fleet is checked again without them.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable, Iterable, TextIO

from inkling_compat.inputs.adapter_dir import list_adapter_dirs, read_fleet
from inkling_compat.engine.evaluate import check, collector_paused
from inkling_compat.errors import InputError, RuleFileError
from inkling_compat.facts.inputs import lora_path_entries
from inkling_compat.inputs.models import AdapterSource, PeftManifest
from inkling_compat.inputs.loading import load_server_config
from inkling_compat.report.model import Report


def fleet_manifests(
    folders: Iterable[str | os.PathLike[str]],
    config: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Any]:
    """Manifests of every adapter directory in `folders` (in folder order, then by name)."""
    server, _ = load_server_config(config)
    lora_paths = lora_path_entries(server)
    listed = []
    for folder in folders:
        dirs = list_adapter_dirs(folder)
        if not dirs:
            raise InputError(os.fspath(folder), "(adapter-dir)", "holds no adapter directory (one subdirectory per adapter expected)")
        listed.append((folder, dirs))
    total = sum(len(dirs) for _, dirs in listed)
    done = 0
    manifests: list[Any] = []
    for folder, dirs in listed:
        base = done

        def step(index: int, _count: int, base: int = base) -> None:
            if progress is not None:
                progress(base + index, total)

        manifests += read_fleet(dirs, folder=folder, lora_paths=lora_paths, progress=step)
        done += len(dirs)
    return manifests


def check_fleet(
    config: Any = None,
    folders: Iterable[str | os.PathLike[str]] = (),
    adapters: Iterable[Any] = (),
    *,
    model: Any = None,
    platform: Any = None,
    sglang_version: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> Report:
    """`check()` over `adapters` (paths, dicts, models, adapter directories) plus every
    adapter directory found in `folders`; `sglang_version` as `check()` takes it (None: found
    once, inputs/release.py)."""
    from inkling_compat.inputs.release import Release, find_release

    if not isinstance(sglang_version, Release):
        sglang_version = find_release(sglang_version, config)
    with collector_paused():  # reading the headers allocates as much as the check (see there)
        report = _check_fleet(config, folders, adapters, model, platform, sglang_version, progress)
    return report  # (the manifests are freed before the collector runs again)


def _check_fleet(config: Any, folders: Any, adapters: Any, model: Any, platform: Any, sglang_version: Any, progress: Any) -> Report:
    manifests = list(adapters) + fleet_manifests(folders, config, progress)
    try:
        return check(config, manifests, model=model, platform=platform, sglang_version=sglang_version)
    except (InputError, RuleFileError, KeyboardInterrupt):
        raise
    except Exception:
        isolated = isolate_failing(manifests, lambda one: check(config, [one], model=model, platform=platform, sglang_version=sglang_version))
        if isolated is None:
            raise  # no single adapter fails alone: the defect is not an adapter's
        return check(config, isolated, model=model, platform=platform, sglang_version=sglang_version)


def isolate_failing(manifests: list[Any], check_one: Callable[[Any], Any]) -> list[Any] | None:
    """`manifests` with each adapter directory that `check_one` fails on (any exception but an
    InputError) replaced by an unreadable manifest naming the failure; None if none fails."""
    out = list(manifests)
    found = False
    for index, manifest in enumerate(manifests):
        source = getattr(manifest, "source", None)
        if not isinstance(manifest, PeftManifest) or source is None or source.unreadable:
            continue  # only directories read by the adapter reader; caller-given manifests raise
        try:
            check_one(manifest)
        except InputError:
            continue
        except Exception as exc:  # the defect, reported as this adapter's problem
            out[index] = defect_manifest(manifest, exc)
            found = True
    return out if found else None


def defect_manifest(manifest: PeftManifest, exc: BaseException) -> PeftManifest:
    """An unreadable-adapter manifest for `manifest`, whose check failed inside inkling-compat."""
    text = " ".join(str(exc).split())
    reason = f"checking it failed inside inkling-compat (a defect: please report it): {type(exc).__name__}: {text[:300]}"
    source = manifest.source
    return PeftManifest.model_construct(
        name=manifest.name,
        path=manifest.path,
        adapter_config={},
        tensors=manifest.tensors.model_construct(root={}),
        added_tokens=None,
        pinned=manifest.pinned,
        source=AdapterSource.model_construct(
            directory=source.directory,
            weights_format=source.weights_format,
            weights_files=list(source.weights_files),
            added_tokens_error=None,
            unreadable=reason,
            unreadable_file="(check)",
        ),
    )


class ProgressBar:
    """`done/total` on stderr, only on a terminal and only once a run has lasted `delay` s."""

    def __init__(self, stream: TextIO | None = None, delay: float = 0.5, label: str = "adapters"):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.monotonic()
        self.delay = delay
        self.label = label
        self.last = 0.0
        self.drawn = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.start < self.delay or (now - self.last < 0.1 and done < total):
            return
        self.last = now
        width = 30
        filled = width * done // max(total, 1)
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {self.label}")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.drawn = False
