"""`lora-paths-same-path-two-names` against each release's own LoRAManager.validate_new_adapter.

The oracle: init_lora_adapters' loop over the --lora-paths entries (lora_manager.py), with the
release's `_load_lora_adapter` id assertion (`LoRARef.deterministic_id`, read from the wheel) and
its `validate_new_adapter` executed from the wheel (an adapter config that passes its other
checks, no memory pool yet); the warnings it logs are recorded, and loading stops at the first
raise. For every generated list of `name=path` entries, the checker's warning is the first one
sglang logs, in its words, and there is none exactly when sglang logs none.
"""

from __future__ import annotations

import types
import uuid
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from inkling_compat import check
from inkling_compat.inputs.versions import SGLANG_RELEASES
from oracle import sglang_sink, wheel_source
from oracle.require import load_or_skip

MANAGER = "sglang/srt/lora/lora_manager.py"
REGISTRY = "sglang/srt/lora/lora_registry.py"
RULE = "lora-paths-same-path-two-names"


class _Warnings:
    def __init__(self) -> None:
        self.said: list[str] = []

    def warning(self, message: str, *args: Any) -> None:
        self.said.append(message % args if args else message)

    def info(self, *args: Any) -> None:
        pass


def _oracle(release: str) -> Any:
    wheel = load_or_skip(lambda: sglang_sink.find_wheel(version=release), f"{release} wheel")
    logger = _Warnings()
    namespace: dict[str, Any] = {"logger": logger, "uuid5": uuid.uuid5, "NAMESPACE_URL": uuid.NAMESPACE_URL}
    exec(wheel_source.method(wheel_source.read(wheel, MANAGER), "LoRAManager", "validate_new_adapter"), namespace)
    exec(wheel_source.method(wheel_source.read(wheel, REGISTRY), "LoRARef", "deterministic_id"), namespace)
    validate, deterministic_id = namespace["validate_new_adapter"], namespace["deterministic_id"]
    config = types.SimpleNamespace(lora_added_tokens_size=0, use_dora=False, r=8, target_modules=["gate_up_proj", "down_proj"])

    def warnings(entries: list[tuple[str, str]]) -> list[str]:
        logger.said.clear()
        manager = types.SimpleNamespace(attn_dp_enabled=False, enable_dp_attention=False, lora_refs={}, loras={}, num_pinned_loras=0, max_loras_per_batch=8)
        for name, path in entries:
            ref = types.SimpleNamespace(lora_id=deterministic_id(name, path), lora_name=name, lora_path=path, pinned=False)
            if ref.lora_id in manager.loras:  # _load_lora_adapter's assertion
                break
            try:
                validate(manager, config, ref)
            except ValueError:
                break
            manager.loras[ref.lora_id] = manager.lora_refs[ref.lora_id] = ref
        return list(logger.said)

    return warnings


RELEASES = [pytest.param(r, id=r) for r in SGLANG_RELEASES]
ENTRIES = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["/p", "/q", "/p/"])), min_size=1, max_size=5)


@pytest.mark.fidelity
@pytest.mark.parametrize("release", RELEASES)
def test_the_first_same_path_warning_is_the_release_s(release: str) -> None:
    warnings = _oracle(release)

    @settings(max_examples=80, deadline=None, database=None)
    @given(ENTRIES)
    @example([("a", "/p"), ("b", "/p")])
    @example([("a", "/p"), ("b", "/q"), ("b", "/p")])  # a warning, then the repeated name's error
    @example([("a", "/p"), ("a", "/p"), ("b", "/p")])  # the same id: refused before any comparison
    @example([("a", "/p"), ("b", "/p"), ("c", "/p")])  # c warns twice; the first is reported
    def run(entries: list[tuple[str, str]]) -> None:
        theirs = warnings(entries)
        report = check({"enable_lora": True, "max_lora_rank": 8, "lora_target_modules": ["gate_up_proj", "down_proj"],
                        "lora_paths": [f"{n}={p}" for n, p in entries]}, sglang_version=release)
        ours = [p.message for p in report.problems if p.rule_id == RULE]
        assert ours == theirs[:1], (entries, theirs)

    run()
