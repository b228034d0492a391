"""The name searches of the sglang replays without a regex against the regexes sglang uses:
`adapter_loader.numbered` (get_layer_id's `layers\\.(\\d+)\\.`, the shared sink's
`shared_experts\\.(\\d+)\\.` and mem_pool's `experts\\.(\\d+)\\.`) and
`load_to_buffer.unmatched_names` (a substring test per target, or one regex search)."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from inkling_compat.sglang import adapter_loader, load_to_buffer
from inkling_compat.sglang.adapter_loader import numbered

KEYS = ("layers.", "shared_experts.", "experts.")
# Pieces of real tensor names, digits (ASCII, Arabic-Indic and fullwidth: `\d` matches them,
# int() reads them), dots and other characters, so that names hit every branch.
PIECES = st.sampled_from(["layers.", "experts.", "shared_", "shared_experts.", "model.", "mlp.", "lora_A.", ".", "1", "0", "12", "7" * 40, "٣", "５", "x", "é", "_", "weight"])
NAMES = st.lists(PIECES, max_size=24).map("".join)


def _regex(name: str, key: str) -> str | None:
    match = re.search(re.escape(key) + r"(\d+)\.", name)
    return match.group(1) if match else None


@settings(max_examples=1500, deadline=None)
@given(name=NAMES, key=st.sampled_from(KEYS))
@example(name="base_model.model.model.layers.10.mlp.shared_experts.gate_up_proj.lora_A.weight", key="layers.")
@example(name="model.layers.x.layers.3.mlp", key="layers.")
@example(name="model.layers.٣.mlp", key="layers.")
@example(name="model.layers.1٣.mlp", key="layers.")
@example(name="layers." * 20 + "5.", key="layers.")
@example(name="layers." + "9" * 40 + ".", key="layers.")
@example(name="layers." + "9" * 32 + ".", key="layers.")
@example(name="layers.12", key="layers.")
@example(name="mlp.shared_experts.gate.experts.4.w", key="experts.")
def test_numbered_is_the_regex_search(name: str, key: str) -> None:
    assert numbered(name, key) == _regex(name, key)


def test_layer_id_is_get_layer_ids_int():
    assert adapter_loader.layer_id("model.layers.10.mlp.w") == 10
    assert adapter_loader.layer_id("model.layers.٣.mlp.w") == 3
    assert adapter_loader.layer_id("model.embed_tokens.w") is None


@settings(max_examples=300, deadline=None)
@given(names=st.lists(NAMES, max_size=12), targets=st.lists(st.sampled_from(["gate_up_proj", "down_proj", "layers", "é", "x.", "7"]), max_size=4))
def test_unmatched_names_is_any_substring_by_either_search(names, targets) -> None:
    expected = [n for n in names if not any(t in n for t in targets)]
    saved = load_to_buffer._PLAIN_TESTS[0]
    try:
        for budget in (10**9, 0):  # substring tests, then the regex
            load_to_buffer._PLAIN_TESTS[0] = budget
            assert load_to_buffer.unmatched_names(names, targets) == expected
    finally:
        load_to_buffer._PLAIN_TESTS[0] = saved
