"""The launch arguments the kernel wrappers hand to Triton (grid, constexprs, launch options and
every scalar argument) for a table of shapes, and the shrinks' choices of a forward (blocks,
splits, counters), on the H200's tile policy and on the interpreter's: the host-side integer
helpers (``tiles.cdiv``, ``tiles.next_power_of_2``) equal triton's own, and the per-shape
launch caches give what the uncached code gave. The table was first recorded by this test run
against the kernels of ``4d8c5ff`` (before the caches: ``git archive 4d8c5ff kernels``, imported
in place of ``kernels/``); the digest below is that table with the H200's gate/up epilogue tile
moved to 16 rows (T <= 2048) and 32 rows in M-major order (above), which changes those 162
launches (y given, H200 policy) and no other row; a mismatch can write the table as JSON for a
diff (``INKLING_LAUNCH_TABLE=path``)."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from inkling_compat.kernels import _triton, tiles
from inkling_compat.kernels import down_proj as dp
from inkling_compat.kernels import gate_up_swiglu as gu
from inkling_compat.kernels import lora_shrink as ls
from inkling_compat.kernels import routing as rt
from inkling_compat.kernels import sink

triton = _triton.triton

# Whole-table digest of the launches (see the module docstring); each row is printed by _table().
TABLE_DIGEST = "be4aef0810d0c98804b3fd733d859d2adf6ae351b7ea13d685e4139b6ccb78ac"
TABLE_ROWS = 2832


@settings(max_examples=3000, deadline=None)
@given(st.integers(min_value=1, max_value=2**31))
def test_next_power_of_2_equals_tritons(n):
    # (from 1: every size the wrappers round is at least 1, and triton's answer for 0 is not the
    # same in every process state of this triton: 0 alone, 1 in a worker of the whole suite)
    assert tiles.next_power_of_2(n) == triton.next_power_of_2(n)
    assert tiles.pow2(n) == max(16, triton.next_power_of_2(max(n, 1)))
    assert tiles.pow2(n, 2) == max(2, triton.next_power_of_2(max(n, 1)))


@settings(max_examples=3000, deadline=None)
@given(st.integers(min_value=0, max_value=2**31), st.integers(min_value=1, max_value=2**31))
def test_cdiv_equals_tritons(x, y):
    assert tiles.cdiv(x, y) == triton.cdiv(x, y)


def test_integer_helpers_at_the_edges():
    for k in range(32):
        for n in (2**k - 1, 2**k, 2**k + 1):
            if n:
                assert tiles.next_power_of_2(n) == triton.next_power_of_2(n), n
            for y in (1, 2, 3, 16, 32, 2**k + 1):
                assert tiles.cdiv(n, y) == triton.cdiv(n, y), (n, y)
    assert tiles.next_power_of_2(0) == 0
    assert tiles.next_power_of_2(2**31) == 2**31


SHAPES = ((1536, 4, 768), (7168, 2, 2048), (32, 1, 16))
TOKENS = (1, 3, 16, 17, 64, 100, 256, 1024, 4096)
S, R = 8, 16


def _describe(value):
    if isinstance(value, torch.Tensor):
        return ["tensor", str(value.dtype)]
    return value


def _record(calls, name):
    def launch(grid, args, meta):
        calls.append([name, list(grid), [_describe(a) for a in args], sorted(meta.items())])

    return launch


def _table(monkeypatch, caps) -> list:
    """Every wrapper's launch for each (shape, T, dtype) of the table, the launch itself recorded
    instead of run (so tensors are allocated, never read)."""
    calls: list = []
    for mod, name in ((gu, "gate_up"), (dp, "down"), (ls, "shrink"), (rt, "routing")):
        monkeypatch.setattr(mod, "_launch", _record(calls, name))
    for mod in (gu, dp, ls, sink):
        monkeypatch.setattr(mod, "caps_of", lambda device: caps)
    clear = getattr(_triton, "clear_launch_caches", None)
    if clear is not None:
        clear()
    for dtype in (torch.bfloat16, torch.float32):
        for H, n, F in SHAPES:
            w13 = torch.empty(2 * n * F, H, dtype=dtype)
            w2 = torch.empty(n * F, H, dtype=dtype)
            b_gu = torch.empty(S, n, 2 * F, R, dtype=dtype)
            a_gu_shared = torch.empty(S, 1, 2 * R, H, dtype=dtype)
            a_gu_expert = torch.empty(S, n, 2 * R, H, dtype=dtype)
            b_dn = torch.empty(S, H, R, dtype=dtype)
            b_dn_expert = torch.empty(S, H, n * R, dtype=dtype)
            a_dn = torch.empty(S, R, n * F, dtype=dtype)
            a_dn_expert = torch.empty(S, n * R, F, dtype=dtype)
            for T in TOKENS:
                x = torch.empty(T, H, dtype=dtype)
                gam = torch.empty(T, n, dtype=dtype)
                act = torch.empty(T, n * F, dtype=dtype)
                ids = torch.zeros(T, dtype=torch.int32)
                routing = rt.build_routing(ids, S)
                rt.build_routing(ids, S, torch.ones(S, dtype=torch.bool))
                for inter in (True, False):
                    gu.gate_up_swiglu(x, w13, gam, n, interleaved=inter)
                    gu.gate_up_swiglu(x, w13, gam, n, interleaved=inter, y=torch.empty(T, 2 * n * F, dtype=dtype))
                gu.gate_up_swiglu(x, w13, gam, n, interleaved=True, routing=routing,
                                  bridge=torch.empty(T, 2 * R, dtype=dtype), b_gu=b_gu)
                gu.gate_up_swiglu(x, w13, gam, n, interleaved=False, routing=routing,
                                  bridge=torch.empty(T, n * 2 * R, dtype=dtype), b_gu=b_gu, bridge_expert_stride=2 * R)
                y_ext = torch.empty(T, 2 * n * F + S * 2 * R, dtype=dtype)
                gu.gate_up_swiglu(x, w13, gam, n, interleaved=True, routing=routing, bridge=y_ext[:, 2 * n * F:],
                                  b_gu=b_gu, bridge_slot_stride=2 * R, y=y_ext[:, :2 * n * F])
                for a_gu in (a_gu_shared, a_gu_expert):
                    gu.gate_up_swiglu(x, w13, gam, n, interleaved=True, routing=routing, b_gu=b_gu, a_gu=a_gu)
                dp.down_proj(act, w2)
                dp.down_proj(act, w2, routing=routing, bridge=torch.empty(T, R, dtype=dtype), b=b_dn)
                dp.down_proj(act, w2, routing=routing, b=b_dn, shrink_a=a_dn, shrink_rank=R)
                dp.down_proj(act, w2, routing=routing, b=b_dn_expert, shrink_a=a_dn_expert, shrink_rank=R, shrink_window=F)
                dp.down_proj(act, w2, routing=routing, bridge=torch.empty(T, S * R, dtype=dtype), b=b_dn,
                             out=torch.empty(T, H, dtype=dtype), accumulate=True, bridge_slot_stride=R)
                if T == 1:
                    one = rt.one_token(ids, S, torch.ones(S, dtype=torch.bool))
                    gu.gate_up_swiglu(x, w13, gam, n, interleaved=True, routing=one, b_gu=b_gu, a_gu=a_gu_shared)
                    dp.down_proj(act, w2, routing=one, b=b_dn, shrink_a=a_dn, shrink_rank=R)
                for split in (1, 3, 8, 64):
                    ls.lora_shrink(x, a_gu_shared.reshape(S, 2 * R, H), routing, 2 * R, split_k=split)
                    ls.lora_shrink(act, a_dn_expert, routing, R, window=F, gather=False, split_k=split, out_dtype=torch.float32)
    # The shrinks' choices of one forward (blocks, splits, counter slices), shared and per-expert A.
    for H, n, F in SHAPES:
        for e_a in (1, n):
            ops = sink.SinkOperands(
                w13_lin=torch.empty(2 * n * F, H), w2_lin=torch.empty(n * F, H), n=n, interleaved=True,
                gate_up_a=torch.empty(S, e_a, 2 * R, H), gate_up_b=torch.empty(S, n, 2 * F, R),
                down_a=torch.empty(S, n, R, F), down_b=torch.empty(S, e_a, H, R)).refresh()
            for T in TOKENS:
                for gate_up in (True, False):
                    p = sink._ShrinkPlan.of(ops, torch.empty(T, H), gate_up=gate_up)
                    calls.append(["shrink_plan", [H, n, F, e_a, T, gate_up], p.block, p.bridge_expert_stride, p.split_gu,
                                  p.split_dn, *(None if c is None else c.numel() for c in (p.counters_gu, p.counters_dn))])
    return calls


@pytest.mark.skipif(not _triton.INTERPRET, reason="the table holds the interpreter's constexprs (UPCAST, ROUND)")
def test_launch_arguments_are_those_recorded(monkeypatch):
    table = {"h200": _table(monkeypatch, tiles.H200), "interpreter": _table(monkeypatch, tiles.INTERPRETER)}
    text = json.dumps(table, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(text.encode()).hexdigest()
    where = os.environ.get("INKLING_LAUNCH_TABLE")
    if where:
        with open(where, "w") as fh:
            json.dump(table, fh, indent=0, sort_keys=True)
    rows = sum(len(v) for v in table.values())
    assert (digest, rows) == (TABLE_DIGEST, TABLE_ROWS)


@pytest.mark.skipif(not _triton.INTERPRET, reason="CPU tensors: compiled triton refuses them (the flags are the host's, the same on both)")
def test_autotuned_launches_get_the_same_flags_and_grid(monkeypatch):
    """With autotuning (GPU, ``INKLING_AUTOTUNE=1``) each wrapper hands the tuner the constexprs of
    the untuned launch less the tile, and a grid function that gives the untuned grid for the
    untuned tile; the epilogue and the accumulate launches stay untuned."""
    TILE = {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages"}
    T, H, n, F = 17, 1536, 4, 768
    x, w13, w2 = torch.empty(T, H), torch.empty(2 * n * F, H), torch.empty(n * F, H)
    gam, act = torch.empty(T, n), torch.empty(T, n * F)
    routing = rt.build_routing(torch.zeros(T, dtype=torch.int32), S)
    a = torch.empty(S, 2 * R, H)
    calls = [
        (gu, lambda: gu.gate_up_swiglu(x, w13, gam, n, interleaved=True)),
        (dp, lambda: dp.down_proj(act, w2)),
        (ls, lambda: ls.lora_shrink(x, a, routing, 2 * R, split_k=3)),
    ]
    for mod, call in calls:
        plain, tuned = [], []

        class Tuner:
            def __getitem__(self, grid):
                return lambda *args, **meta: tuned.append((grid, args, meta))

        monkeypatch.setattr(mod, "_launch", _record(plain, "plain"))
        monkeypatch.setattr(mod, "caps_of", lambda device: tiles.H200)
        _triton.clear_launch_caches()
        call()
        monkeypatch.setattr(mod, "_tuned", Tuner())
        _triton.clear_launch_caches()
        call()
        monkeypatch.setattr(mod, "_tuned", None)
        _triton.clear_launch_caches()
        (_, grid, args, meta), = plain
        (tgrid, targs, tmeta), = tuned
        meta = dict(meta)
        assert [_describe(v) for v in targs] == args
        assert tmeta == {k: v for k, v in meta.items() if k not in TILE}
        assert list(tgrid(meta)) == grid
