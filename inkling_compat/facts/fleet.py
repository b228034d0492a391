"""Facts about the whole set of adapters of a check: the start-up adapters and the fleet.

`facts.startup` says what the --lora-paths adapters decide for adapters loaded later, and
`facts.fleet` holds the cross-adapter aggregates fleet rules read. Both are computed in one
pass here so that a rule need not iterate `adapters` per adapter (O(adapters) each).
"""

from __future__ import annotations

from inkling_compat.facts.adapter import OwnFacts
from inkling_compat.facts.types import FleetFacts, PinRefusal, SharedAdapterPath, StartupFacts
from inkling_compat.inputs.models import LoraRef

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Sequence

# models/inkling.py `supported_lora_modules`
INKLING_LORA_MODULES = ("qkvr", "wo_ud", "gate_up_proj", "down_proj", "embed_tokens", "lm_head")


def startup_facts(lora_paths: list[LoraRef], own: list[OwnFacts]) -> StartupFacts:
    """The --lora-paths PEFT adapters' largest r and the union of their normalized targets
    (`all` expanded to Inkling's modules)."""
    names = {p.name for p in lora_paths}
    startup = [a for a in own if a.form == "peft" and a.name in names]
    ranks = [a.rank for a in startup if a.rank is not None]
    targets: set[str] = set()
    for a in startup:
        targets.update(a.normalized_targets)
        if "all" in a.normalized_targets:
            targets.update(INKLING_LORA_MODULES)
    max_r = max(ranks) if ranks else None
    return StartupFacts(max_r=max_r, targets=sorted(targets), shared_path=shared_path(lora_paths))


def shared_path(lora_paths: list[LoraRef]) -> SharedAdapterPath | None:
    """validate_new_adapter's first "already loaded with name" warning (lora_manager.py l.354-365).
    Each entry is compared, in load order, with every one loaded before it, name then path per
    loaded entry: a path loaded under another name warns; a repeated name raises there (after the
    warnings of the loaded entries before it); a repeated name=path (the same id) is refused by
    _load_lora_adapter's assertion before any comparison. Nothing after a refusal is loaded."""
    first: dict[str, tuple[int, str]] = {}  # path -> (load index, name) of its first entry
    index_of: dict[str, tuple[int, str]] = {}  # name -> (load index, path)
    for entry in lora_paths:
        earlier = first.get(entry.path)
        same_name = index_of.get(entry.name)
        if same_name is not None:
            if same_name[1] == entry.path or earlier is None or earlier[0] > same_name[0]:
                return None
            return SharedAdapterPath(path=entry.path, loaded_name=earlier[1], name=entry.name)
        if earlier is not None:
            return SharedAdapterPath(path=entry.path, loaded_name=earlier[1], name=entry.name)
        first[entry.path] = (len(index_of), entry.name)
        index_of[entry.name] = (len(index_of), entry.path)
    return None


def startup_pin_stop(lora_paths: list[LoraRef], max_loras_per_batch: int) -> tuple[str, int] | None:
    """Where sglang's pinned-adapter counter stops start-up: ("refused", i) where entry i is
    refused as a pinned adapter, ("int", i) where `int(pinned)` of entry i raises (None: at
    neither). validate_new_adapter tests `lora_ref.pinned`'s truthiness against
    `num_pinned_loras >= max_loras_per_batch - 1` (lora_manager.py l.378) before the entry
    loads; after it loaded the counter grows by `int(lora_ref.pinned)` (l.319): "pinned": 2
    counts twice, "0" is checked but counts zero, -1 takes one off. Either failure ends
    init_lora_adapters, so nothing after it is loaded (or counted)."""
    count = 0
    for i, entry in enumerate(lora_paths):
        # max_loras_per_batch <= 0 is another rule's finding (adapter-pin-all-slots' `when`).
        if entry.pinned and max_loras_per_batch > 0 and count >= max_loras_per_batch - 1:
            return ("refused", i)
        if entry.pinned_count is None:
            return ("int", i)
        count += entry.pinned_count
    return None


def _startup_pinned_count(lora_paths: list[LoraRef]) -> int:
    return sum(entry.pinned_count or 0 for entry in lora_paths)


def pin_refusal(lora_paths: list[LoraRef], runtime_pinned: list[str], max_loras_per_batch: int) -> PinRefusal | None:
    """The first load validate_new_adapter refuses as a pinned adapter: a --lora-paths entry
    (startup_pin_stop), else a pinned run-time load (a bool: each adds 1) after a start-up
    that completed."""
    stop = startup_pin_stop(lora_paths, max_loras_per_batch)
    if stop is not None:
        return PinRefusal(name=lora_paths[stop[1]].name, startup=True) if stop[0] == "refused" else None
    count = _startup_pinned_count(lora_paths)
    for name in runtime_pinned:
        if count >= max_loras_per_batch - 1:
            return PinRefusal(name=name, startup=False)
        count += 1
    return None


def fleet_facts(
    lora_paths: list[LoraRef], manifests: Sequence[Any], own: list[OwnFacts], per_adapter: list[Any], max_loras_per_batch: int = 8
) -> FleetFacts:
    """The cross-adapter aggregates, computed in one pass.

    The CEL library's `filter` and `map` macros take time quadratic in the list length
    (measured: 0.84 s for `size(adapters.filter(...))` over 1,000 adapters), so fleet rules read
    these lists instead of filtering `adapters` / `adapter_facts_list` themselves. Each entry
    says which expression it replaces (tests/test_fleet.py compares both on random fleets).
    """
    startup = {p.name for p in lora_paths}
    docs = [{"name": m.name, "pinned": bool(getattr(m, "pinned", False)), "form": a.form} for m, a in zip(manifests, per_adapter)]
    runtime = [d for d in docs if d["form"] == "peft" and d["name"] not in startup]
    counts: dict[str, int] = {}
    for d in docs:
        counts[d["name"]] = counts.get(d["name"], 0) + 1
    peft = [a for a in own if a.form == "peft"]
    first_by_name: dict[str, OwnFacts] = {}
    for a in peft:
        first_by_name.setdefault(a.name, a)
    with_outer = {a.name for a in peft if a.outer_layouts}
    reference = None  # outer layout of the first --lora-paths adapter that has one
    first = next((p for p in lora_paths if p.name in with_outer), None)
    if first is not None:
        layouts = first_by_name[first.name].outer_layouts or next(
            a.outer_layouts for a in peft if a.name == first.name and a.outer_layouts
        )
        reference = layouts[0]
    conflict_id = None
    if reference is not None:
        conflicting = {a.name for a in peft if any(v != reference for v in a.outer_layouts)}
        hit = next((p for p in lora_paths if p.name in conflicting), None)
        if hit is not None:
            conflict_id = first_by_name[hit.name].lora_id  # type: ignore[union-attr]
    return FleetFacts(
        # adapters.filter(a, a.form == "peft" && !facts.lora_paths.exists(p, p.name == a.name)).map(a, a.name)
        runtime_names=[d["name"] for d in runtime],
        # ... && !a.pinned
        runtime_unpinned_names=[d["name"] for d in runtime if not d["pinned"]],
        # adapter-pin-all-slots: sglang's counter (int(pinned)), which CEL cannot fold.
        # lora-max-lora-rank-zero yields to the copy replay's own failure (the same assertion).
        startup_copy_failure=next(
            (a.name for a in per_adapter if getattr(a, "form", None) == "peft" and a.name in startup and getattr(a, "pool_fit", None) is not None), None
        ),
        pin_refusal=pin_refusal(lora_paths, [d["name"] for d in runtime if d["pinned"]], max_loras_per_batch),
        # adapters.filter(a, !facts.lora_paths.exists(p, p.name == a.name)
        #   && adapters.filter(b, b.name == a.name).size() > 1).map(a, a.name)
        duplicate_runtime_names=[d["name"] for d in docs if d["name"] not in startup and counts[d["name"]] > 1],
        # adapter-mixed-shared-outer: the reference layout (first --lora-paths adapter with a
        # detected layout) and the id of the first --lora-paths adapter disagreeing with it.
        startup_outer_reference=reference,
        outer_conflict_id=conflict_id,
    )
