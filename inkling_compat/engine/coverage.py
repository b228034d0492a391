"""Coverage: which rules one check *checked*, found *not applicable* or did *not check*.

A rule is *checked* when its `when` held and it ran on inputs that were given and read; *not
applicable* when its `when` is false for these inputs, or when it is `inkling_only` and the
model read is another model (never evaluated: its site is not on that model's path; the
report's note says so once); *not checked* when an input it reads
(directly, or through a fact derived from it: each fact field's `From`, `facts.types.derived_from`) was not given or
could not be read (no --model, an empty or non-Inkling config.json, no adapter, an adapter
directory that could not be read, pickle-only weights; for an `inkling_only` rule, no model
config read at all), or when sglang stops at an earlier rule first (`after`). A `when` that is false is trusted only if it reads no input that was
replaced by a placeholder: a sink rule is not "not applicable" because the placeholder model
has no shared experts.

What each rule reads is worked out once per plan (`Plan.reads`, from the paths of its
expressions); per check only the missing inputs are computed, then one status per rule.

A fact sglang decides only on the GPU it starts on is None, and the input `start-up` is then
missing: a rule that reads it is not checked, with why (facts.types.INPUTS).

A server argument whose value a launch file does not define (`--port $PORT`) is a missing input
of its own, `value:<dest>`: a rule that reads `config.<dest>` (or `config.arguments.<dest>`) is
not checked, and where the dest is one of the typed fields the facts are derived from, so is
every rule that reads a fact derived from the config (`CONFIG_FACTS`).
"""

from __future__ import annotations

from collections import Counter

from inkling_compat.facts.types import derived_from
from inkling_compat.report.model import Coverage

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Iterable

CHECKED, NOT_APPLICABLE, NOT_CHECKED = "checked", "not_applicable", "not_checked"
# A rule's code in one scope: CHECKED, NOT_APPLICABLE, or the reason it was not checked (a str).
# The order in which a rule's missing inputs are named (the first one is its reason).
# "inkling": the model config is an Inkling one (every rule that reads the model needs it,
# except those marked `any_model`). "inkling_model": the model is one sglang builds with an
# Inkling class; a rule marked `inkling_only` needs it, and where the model read is another
# one its "reason" is NOT_APPLICABLE itself (first in the order: whatever else is missing, the
# site is not on that model's path).
INPUTS = ("inkling_model", "config", "model", "inkling", "adapter", "weights", "platform", "start-up")
_INKLING_ONLY = frozenset({"model", "inkling", "inkling_model"})
_ROOTS: dict[str, tuple[str, ...]] = {
    "config": ("config",),
    "env": ("config",),
    "model": ("model",),
    "platform": ("platform",),
    "input": (),
    "adapters": ("adapter",),
    "adapter_facts_list": ("adapter",),
}
# (reason, placeholder): `placeholder` when the check ran on a stand-in for the missing input
# (sglang's defaults, the placeholder model, an empty tensor table), so a false `when` that
# reads it says nothing; not for an adapter that is absent (its variables are undefined, and
# a `when` that is false without them is false for every adapter).
Missing = tuple[tuple[str, str, bool], ...]


CONFIG_FACTS = "config-facts"  # the facts derived from the typed server config fields


def value_input(dest: str) -> str:
    """The input name of one server argument's value (missing when a launch file does not
    define it)."""
    return f"value:{dest}"


def path_inputs(path: tuple[str, ...]) -> tuple[str, ...]:
    """The inputs a variable path is derived from, e.g. ("facts", "sink", "sink_class") ->
    ("config", "model", "config-facts")."""
    root = path[0]
    if root == "config" and len(path) > 1:
        field = path[2] if path[1] == "arguments" and len(path) > 2 else path[1]
        return ("config", value_input(field)) if field != "arguments" else ("config", value_input("*arguments"))
    if root in _ROOTS:
        return _ROOTS[root]
    if root == "adapter":
        return ("adapter", "weights") if path[1:2] == ("tensors",) else ("adapter",)
    declared = derived_from(path)  # facts / adapter_facts: the deepest field that declares it
    if declared is None:
        declared = ("config",) if root == "facts" else ("adapter",)
    return declared + (CONFIG_FACTS,) if "config" in declared else declared


def inputs_read(paths: Iterable[tuple[str, ...]], memo: "dict[Any, Any] | None" = None) -> frozenset[str]:
    """The inputs these paths are derived from (`memo`: path -> inputs, shared by the calls
    of one plan: the rules read many of the same paths)."""
    memo = {} if memo is None else memo
    names: set[str] = set()
    for path in paths:
        found = memo.get(path)
        if found is None:
            found = memo[path] = path_inputs(path)
        names.update(found)
    return frozenset(names | {"inkling"} if "model" in names else names)


def rule_reads(compiled: Any, memo: "dict[Any, Any] | None" = None) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(inputs the rule reads, inputs its `when` reads, inputs that gate it).

    The gate is what `when` and `condition` read (not the message's params): a rule whose
    test read a placeholder for a missing input decided nothing about the deployment, so it
    must not fire. The checker's own findings about its inputs (origin inkling-compat: an
    unreadable file, a non-Inkling model, an unknown key) are about that missing input and
    are never gated.
    """
    rule = compiled.rule
    memo = {} if memo is None else memo
    needs, when_needs = inputs_read(compiled.paths, memo), inputs_read(compiled.when_paths, memo)
    gate = frozenset() if rule.origin == "inkling-compat" else inputs_read(compiled.gate_paths, memo)
    if rule.any_model:
        needs, when_needs, gate = (s - {"inkling"} for s in (needs, when_needs, gate))
    if rule.inkling_only:  # the model decides whether the site is reached at all, whatever the rule reads
        needs, when_needs, gate = (s | _INKLING_ONLY for s in (needs, when_needs, gate))
    return needs, when_needs, gate


def block_row(reads: "tuple[tuple[frozenset[str] | tuple[str, ...], ...], ...]", missing: Missing) -> tuple[tuple[str | None, bool, str | None], ...]:
    """Per rule: the reason it is not checked (None: nothing it reads is missing), whether a
    false `when` is untrusted (it reads a placeholder), and the reason it may not fire (its
    `when` or `condition` read a placeholder; None: it may). `reads`: per rule what it reads,
    its `when` reads and gates it, as sets or (a plan the compiled artifact holds) tuples."""
    if not missing:  # (every input given and read: the usual check)
        return ((None, False, None),) * len(reads)
    reason_of: dict[str, str] = {}
    for name, reason, _ in missing:
        reason_of.setdefault(name, reason)
    placeholders = frozenset(name for name, _, placeholder in missing if placeholder)
    order = [name for name in INPUTS if name in reason_of] + [name for name in reason_of if name not in INPUTS]
    gating = [name for name in order if name in placeholders]
    rows = []
    for needs, when_needs, gate in reads:  # (plain loops: a row per rule, some two hundred)
        why = gated = None
        for name in order:
            if name in needs:
                why = reason_of[name]
                break
        for name in gating:
            if name in gate:
                gated = reason_of[name]
                break
        rows.append((why, not placeholders.isdisjoint(when_needs), gated))
    return tuple(rows)


def global_missing(facts: Any, unknown_values: tuple[tuple[str, str], ...] = (), model_not_read: bool = False) -> Missing:
    """The inputs missing for the whole check (platform is not: it defaults to one H200, the
    documented default, and the platform checks are checked for it). `unknown_values`: server
    arguments whose value a launch file does not define, (dest, why); dest "*": any argument.
    `model_not_read`: the arguments name a model that was not read (a hub id not in the local cache)."""
    given = facts.inputs_given
    out: list[tuple[str, str, bool]] = []
    for dest, why in unknown_values:
        reason = why
        if dest == "*":
            out.append(("config", reason, True))
            continue
        out.append((value_input(dest), reason, True))
        out.append((value_input("*arguments"), reason, True))
        if dest in _typed_fields():
            out.append((CONFIG_FACTS, reason, True))
    if not given.config:
        out.append(("config", "no server config", True))
    if not given.model:
        out.append(("model", "--model-path not read" if model_not_read else "no --model", True))
    elif given.model_architecture is None:
        out.append(("model", "model config is empty", True))
    elif not given.model_is_inkling:
        out.append(("inkling_model", NOT_APPLICABLE, True))
        out.append(("inkling", f"model is not Inkling ({given.model_architecture})", True))
    if not facts.adapters:
        out += [("adapter", "no adapter", False), ("weights", "no adapter", False)]
    routed = facts.model.routed_moe
    if routed.lora_runner_backend is None:  # (facts/model.py _lora_runner_backend)
        out.append(("start-up", f"--moe-runner-backend auto with {routed.quant_method} routed experts and a quantization: sglang picks the MoE runner on the GPU at start-up", True))
    return tuple(out)


def adapter_missing(manifest: Any, form: str) -> Missing:
    """What of one adapter could not be read: all of it, or its tensors."""
    if form == "unreadable":
        return (("adapter", "adapter could not be read", True), ("weights", "adapter could not be read", True))
    if form != "peft":
        return ()
    source = manifest.source
    if source is not None and source.weights_format == "pickle":
        return (("weights", "pickle weights, never opened", True),)
    if source is not None and source.weights_format == "none":
        return (("weights", "no weights file", True),)
    if source is None and not manifest.tensors.root:
        return (("weights", "no tensors stated", True),)
    return ()


def counts(codes: Iterable[str]) -> dict[str, Any]:
    """checked / not_applicable / not_checked counts of one scope's codes and the reasons."""
    tally = Counter(codes)
    checked, not_applicable = tally.pop(CHECKED, 0), tally.pop(NOT_APPLICABLE, 0)
    return {CHECKED: checked, NOT_APPLICABLE: not_applicable, NOT_CHECKED: sum(tally.values()), "not_checked_reasons": dict(tally)}


class Tally:
    """The codes of one check's scopes (a code per rule: CHECKED, NOT_APPLICABLE or the reason
    it was not checked), folded into one status per rule when the report's coverage is first
    read: an adapter rule is not checked if it was not checked for some adapter, else checked
    if it was for one, else not applicable."""

    __slots__ = ("global_ids", "adapter_ids", "global_codes", "adapter_codes", "absent_codes")

    def __init__(self, global_ids: tuple[str, ...], adapter_ids: tuple[str, ...]):
        self.global_ids, self.adapter_ids = global_ids, adapter_ids
        self.global_codes: list[str] = []
        self.adapter_codes: list[list[str]] = []  # per adapter, in input order
        self.absent_codes: list[str] | None = None  # the adapter rules of a check without adapters

    def record(self, scope: int, codes: list[str]) -> None:
        """One scope's codes: the global scope (0), then each adapter in input order."""
        if scope == 0:
            self.global_codes = codes
        else:
            self.adapter_codes.append(codes)

    def fold(self) -> tuple[dict[str, str], dict[str, list[str]], list[dict[str, Any]]]:
        status: dict[str, str] = {}
        by_reason: dict[str, list[str]] = {}
        for rule_id, c in zip(self.global_ids, self.global_codes):
            if c == CHECKED or c == NOT_APPLICABLE:
                status[rule_id] = c
            else:
                status[rule_id] = NOT_CHECKED
                by_reason.setdefault(c, []).append(rule_id)
        scopes = self.adapter_codes if self.absent_codes is None else [self.absent_codes]
        for rule_id, column in zip(self.adapter_ids, zip(*scopes)):  # one rule over every adapter
            seen = dict.fromkeys(column)  # distinct codes, first seen first
            checked = CHECKED in seen
            seen.pop(CHECKED, None)
            seen.pop(NOT_APPLICABLE, None)
            reasons = list(seen)
            status[rule_id] = NOT_CHECKED if reasons else CHECKED if checked else NOT_APPLICABLE
            for reason in reasons:
                by_reason.setdefault(reason, []).append(rule_id)
        return status, by_reason, [counts(codes) for codes in self.adapter_codes]

    def coverage(self, notes: tuple[str, ...] = ()) -> Coverage:
        return Coverage(notes=notes, source=self.fold)


def notes(facts: Any, unknown_values: tuple[tuple[str, str], ...] = (), launch: tuple[str, ...] = ()) -> tuple[str, ...]:
    """What the counts alone do not say (`launch`: a launch file's own notes)."""
    out = [f"not checked: {why}" for _, why in unknown_values] + list(launch)
    given = facts.inputs_given
    if given.model_architecture is not None and not given.model_is_inkling:
        out.append(f"the model is {given.model_architecture}: the Inkling checks do not apply; the general LoRA and server-argument checks ran")
    if not facts.lora_enabled and given.config:
        out.append("LoRA is not enabled (no enable_lora, no lora_paths): the LoRA checks do not apply")
    return tuple(out)


def refused_notes(facts: Any) -> tuple[str, ...]:
    """The notes of arguments sglang refuses while parsing them (a launch command, a server
    config): it stops before it reads the model, so a model config the check was not given is
    not reached (never "not given")."""
    if facts.inputs_given.model:
        return ()
    return ("sglang refused its arguments before it read the model config: the checks that read it were not reached",)


def _typed_fields() -> frozenset[str]:
    from inkling_compat.inputs.models import ServerConfig

    return frozenset(ServerConfig.__fact_fields__) - {"arguments"}
