"""One implementation of each sglang step: the shapes the checker predicts are the shapes the
runtime builds.

The adapter normalization (`sglang/adapter_loader.plan_layer`) and the shared sink's TP slicing
(`sglang/slicing.slice_factor` / `slice_expert`) return plans of torch steps; the checker's
facts apply them to shapes, `runtime/pool_builder` to tensors. Here every accepted generated
setup (check() has no errors) goes through both: the runtime's four buffers must have the
shapes of the checker's pool (`facts.pool`), every slot's sliced factors the shapes the
checker's copy replay (`sglang/load_to_buffer`) hands to the pool, on every TP rank, for both
outer layouts and for pool-form and PEFT-form adapters. Values are checked against sglang's
own slice methods (run from the 0.5.23 wheel by tests/oracle) and against plain indexing of the original tensors.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from inkling_compat.api import evaluate  # noqa: E402
from inkling_compat.runtime import pool_builder as pb  # noqa: E402
from inkling_compat.runtime.load import build_pool  # noqa: E402
from inkling_compat.sglang import adapter_loader, load_to_buffer, slicing  # noqa: E402
from inkling_compat.sglang.plan import Take, apply_shapes  # noqa: E402
from inkling_compat.testing.strategies import PEFT_LAYER_PREFIX, SinkSetup, peft_manifest, sink_setups  # noqa: E402

BUFFERS = ("gate_up_lora_a", "gate_up_lora_b", "down_lora_a", "down_lora_b")
# Small shapes: the suite runs on 2 CPU cores.
FAST = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


LAYOUTS = [(tp, outer) for tp in (1, 2, 4) for outer in (False, True)]  # every TP size, both outer layouts


@st.composite
def small_setups(draw, tp: int, shared_outer: bool):
    """`sink_setups()` (sink class, n, S, ...) on the given TP size and outer layout, with small
    H, I, S and R."""
    setup = draw(sink_setups(max_slots=3))
    return replace(
        setup,
        tp=tp,
        shared_outer=shared_outer,
        hidden=64 * draw(st.integers(1, 2)),
        intermediate=tp * 16 * draw(st.integers(1, 2)),
        rank=draw(st.integers(1, 6)),
    )


@st.composite
def peft_fleets(draw, tp: int, shared_outer: bool):
    """A small setup and 1..S PEFT manifests for it: ranks r <= R, the layouts sglang loads
    into that pool, shared-sink factors in one or two layers."""
    setup = draw(small_setups(tp, shared_outer))
    layers = sorted(set(draw(st.lists(st.integers(0, 15), min_size=1, max_size=2))))
    manifests = []
    for i in range(draw(st.integers(1, setup.slots))):
        r = draw(st.integers(1, setup.rank))
        # A shared-outer pool takes flat factors (numbered ones are refused for n > 1); a
        # per-expert pool takes numbered ones, and flat ones fill expert 0 only.
        layout = "flat" if shared_outer else draw(st.sampled_from(("flat", "numbered")))
        manifests.append(peft_manifest(setup, r, layout=layout, layers=layers, name=f"a{i}", alpha=float(draw(st.integers(1, 16)))))
    return setup, manifests


def _accepted(setup: SinkSetup, adapters):
    checked = evaluate(setup.config(), adapters, model=setup.model())
    return checked if checked.report.ok else None


def _pool_shapes(pool) -> dict[str, list[int]]:
    return dict(zip(BUFFERS, (list(t.shape) for t in pool.buffers())))


def _predicted_pool(facts) -> dict[str, list[int]]:
    return {name: list(getattr(facts.pool, name)) for name in BUFFERS}


@pytest.mark.parametrize("tp,shared_outer", LAYOUTS)
@FAST
@given(data=st.data())
def test_pool_manifest_buffers_have_the_checked_shapes(tp, shared_outer, data):
    setup = data.draw(small_setups(tp, shared_outer))
    checked = _accepted(setup, setup.adapter())
    if checked is None:
        return
    for tp_rank in range(setup.tp):
        built = build_pool(checked, tp_rank=tp_rank, seed=tp_rank)
        assert _pool_shapes(built.pool) == _predicted_pool(checked.facts) == setup.pool_shapes()
        assert built.pool.slot_ranks == [setup.rank] * setup.slots
        assert all(t.abs().sum() > 0 for t in built.pool.buffers())  # random non-zero factors


def _random_tensors(manifest, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {name: torch.randn(*spec["shape"], generator=g) + 3.0 for name, spec in manifest["tensors"].items()}


def _checker_sliced(manifest, setup: SinkSetup, layer: int, tp_rank: int) -> dict[str, list[int]]:
    """What the checker predicts the slice methods hand to slot copy, per site, stacked as the
    pool holds it: the facts' own normalization and routing of the manifest's shapes."""
    r = manifest["adapter_config"]["r"]
    shapes = {n: list(s["shape"]) for n, s in manifest["tensors"].items() if adapter_loader.layer_id(n) == layer}
    assert adapter_loader.normalize_layer_shared(layer, shapes, r, setup.n, True) is None
    routed, _ = load_to_buffer.route_shared(shapes, ["gate_up_proj", "down_proj"])
    out = {}
    for site in load_to_buffer.SITES:
        cut = load_to_buffer.slice_site(site, routed[site], setup.n, setup.tp, tp_rank, setup.f_local)
        assert cut is not load_to_buffer.STOP
        out[site] = [len(cut), *next(iter(cut.values()))] if isinstance(cut, dict) else list(cut)
    return out


@pytest.mark.parametrize("tp,shared_outer", LAYOUTS)
@FAST
@given(data=st.data())
def test_peft_adapters_buffers_and_slots_have_the_checked_shapes(tp, shared_outer, data):
    setup, manifests = data.draw(peft_fleets(tp, shared_outer))
    checked = _accepted(setup, manifests)
    if checked is None:
        return
    facts = checked.facts
    layer = adapter_loader.layer_id(next(iter(manifests[0]["tensors"])))
    for tp_rank in range(setup.tp):
        # The runtime's path: one check's inputs and facts -> pool (random values per manifest).
        built = build_pool(checked, tp_rank=tp_rank, seed=tp_rank)
        assert _pool_shapes(built.pool) == _predicted_pool(facts)
        assert built.pool.slot_ranks[: len(manifests)] == [m["adapter_config"]["r"] for m in manifests]
        geo = built.geometry
        for slot, manifest in enumerate(manifests):
            tensors = _random_tensors(manifest, seed=slot)
            factors, rank, _ = pb.peft_factors(tensors, manifest["adapter_config"], geo, layer, inkling=True, name=manifest["name"])
            assert rank == manifest["adapter_config"]["r"]
            assert {site: list(t.shape) for site, t in factors.items()} == _checker_sliced(manifest, setup, layer, tp_rank)
            assert all(t.abs().sum() > 0 for t in factors.values())


# --- the plans on tensors are sglang's own torch code ----------------------------------------


def _sglang_slice(oracle, factor, w, tp_rank, target, n, tp, f):
    """sglang 0.5.23's own slice_moe_lora_{a,b}_weights, executed from the wheel (tests/oracle),
    on a real CPU tensor."""
    layer = oracle.layer("legacy", n=n, tp_size=tp, f_local=f)
    method = layer.slice_moe_lora_a_weights if factor == "a" else layer.slice_moe_lora_b_weights
    return method(w, tp_rank, target)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    factor=st.sampled_from(("a", "b")),
    target=st.sampled_from((slicing.GATE_UP, slicing.DOWN)),
    n=st.integers(1, 3),
    ndim=st.sampled_from((2, 3)),
    dims=st.lists(st.integers(1, 9), min_size=3, max_size=3),
    tp=st.sampled_from((1, 2, 4)),
    data=st.data(),
)
def test_slice_plans_on_tensors_are_sglangs_slicing_including_cuts_past_the_end(sglang_oracle, factor, target, n, ndim, dims, tp, data):
    """Random shapes, F too large for some (the cuts run past the axis and are clamped): the
    plan on a tensor equals sglang's code on it, and the plan on the shape predicts its shape."""
    shape = dims[:ndim]
    # Keep the 2-D step's divisibility (its failures are the sink-slice-* rules' business).
    if ndim == 2 and factor == "a" and target == slicing.DOWN:
        shape = [dims[0], dims[1] * n]
    if ndim == 2 and factor == "b" and target == slicing.GATE_UP:
        shape = [dims[0] * n, dims[1]]
    tp_rank = data.draw(st.integers(0, tp - 1))
    f = data.draw(st.integers(1, 6))
    w = torch.randn(*shape)
    result = slicing.slice_factor(factor, shape, target, n, tp, tp_rank, f)
    assert result.failure is None
    ours = pb.apply_plan(result.plan, {slicing.WEIGHT: w})[slicing.WEIGHT]
    theirs = _sglang_slice(sglang_oracle, factor, w, tp_rank, target, n, tp, f)
    assert list(ours.shape) == list(theirs.shape) == result.shape
    assert torch.equal(ours, theirs)
    assert apply_shapes(result.plan, {slicing.WEIGHT: list(shape)})[slicing.WEIGHT] == result.shape


def test_take_past_the_end_is_clamped_as_python_slicing():
    """A cut [6, 10) of an axis of 7 keeps one row, [9, 12) none: narrow() on the plan's clamped
    bounds, as `t[6:10]` / `t[9:12]`."""
    t = torch.arange(7 * 2).reshape(1, 7, 2)
    result = slicing.slice_factor("b", [1, 7, 2], slicing.GATE_UP, 1, 2, 1, 6)  # gate rows [6, 12), up rows [9, 15)
    assert result.plan == (Take(slicing.WEIGHT, 1, ((6, 7), (7, 7))),)
    assert torch.equal(pb.apply_plan(result.plan, {slicing.WEIGHT: t})[slicing.WEIGHT], torch.cat([t[:, 6:12], t[:, 9:15]], 1))
    assert result.shape == [1, 1, 2]


# --- values land where the plans say ---------------------------------------------------------


def _write_adapter(path: Path, tensors: dict, r: int, alpha: float) -> str:
    from safetensors.torch import save_file

    path.mkdir()
    (path / "adapter_config.json").write_text(json.dumps(
        {"peft_type": "LORA", "r": r, "lora_alpha": alpha, "target_modules": ["gate_up_proj", "down_proj"]}))
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(path / "adapter_model.safetensors"))
    return str(path)


@pytest.mark.parametrize("shared_outer", [True, False])
def test_slot_values_are_the_original_tensors_indexed(tmp_path, shared_outer):
    """tp = 4, rank 3: a slot's factors equal plain indexing of the adapter's tensors (flat
    factors into a shared-outer pool, numbered per-expert factors into a per-expert pool)."""
    setup = SinkSetup(n=2, hidden=64, intermediate=64, tp=4, slots=2, rank=4, shared_outer=shared_outer, sink_class="legacy")
    r, alpha, p, layer = 3, 6.0, 3, 1
    manifest = peft_manifest(setup, r, layers=(layer,), alpha=alpha)
    tensors = _random_tensors(manifest, seed=7)
    adapter = _write_adapter(tmp_path / "adapter", tensors, r, alpha)
    checked = evaluate(setup.config(), [adapter], model=setup.model())
    assert checked.report.ok, str(checked.report)
    pool = build_pool(checked, tp_rank=p).pool
    a_gu, b_gu, a_dn, b_dn = pool.buffers()
    n, I, F, R, s = setup.n, setup.intermediate, setup.f_local, setup.rank, alpha / r
    base = f"{PEFT_LAYER_PREFIX}.{layer}.mlp.shared_experts"
    gate, up = slice(p * F, (p + 1) * F), slice(I + p * F, I + (p + 1) * F)
    for e in range(n):
        if shared_outer:
            A, B = tensors[f"{base}.gate_up_proj.lora_A.weight"], tensors[f"{base}.gate_up_proj.lora_B.weight"][e * 2 * I:(e + 1) * 2 * I]
            Ad, Bd = tensors[f"{base}.down_proj.lora_A.weight"][:, e * I:(e + 1) * I], tensors[f"{base}.down_proj.lora_B.weight"]
            outer = 0
        else:
            A, B = tensors[f"{base}.{e}.gate_up_proj.lora_A.weight"], tensors[f"{base}.{e}.gate_up_proj.lora_B.weight"]
            Ad, Bd = tensors[f"{base}.{e}.down_proj.lora_A.weight"], tensors[f"{base}.{e}.down_proj.lora_B.weight"]
            outer = e
        assert torch.equal(a_gu[0, outer, :r], A) and torch.equal(a_gu[0, outer, R:R + r], A)
        assert torch.allclose(b_gu[0, e, :F, :r], s * B[gate]) and torch.allclose(b_gu[0, e, F:, :r], s * B[up])
        assert torch.equal(a_dn[0, e, :r], Ad[:, p * F:(p + 1) * F])
        assert torch.allclose(b_dn[0, outer, :, :r], s * Bd)
    assert all(t[1].abs().sum() == 0 for t in pool.buffers())  # the second slot stays empty
    assert a_gu[0, :, r:R].abs().sum() == 0 and b_gu[0, :, :, r:].abs().sum() == 0
