"""The tile policy (kernels/tiles.py) on the CPU: its choices for the H200 and for Triton's
interpreter against a table, so the GPU branch runs in a CPU test; and every kernel wrapper
asks it (a planted policy is what the launch receives)."""

from __future__ import annotations

import pytest
import torch

from inkling_compat.kernels import tiles
from inkling_compat.kernels.tiles import H200, INTERPRETER, DeviceCaps, Tile

# (kernel, T, K, N, dtype bytes) -> (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages[, GROUP_M: 8 when
# not given]); BLOCK_N of the shrink is unused (16). Shapes: the benchmark's (H, n, F) = (1536, 4, 768) and (7168, 2, 2048).
H200_TABLE = {
    ("lora_shrink", 1, 1536, 0, 2): (16, 16, 128, 4, 4),
    ("lora_shrink", 64, 1536, 0, 2): (16, 16, 128, 4, 4),
    ("lora_shrink", 65, 3072, 0, 2): (32, 16, 128, 4, 4),
    ("lora_shrink", 256, 3072, 0, 2): (32, 16, 128, 4, 4),
    ("lora_shrink", 4096, 7168, 0, 2): (64, 16, 64, 4, 4),
    ("lora_shrink", 1, 1536, 0, 4): (16, 16, 64, 4, 3),
    ("gate_up_swiglu", 1, 1536, 768, 2): (16, 32, 128, 4, 4),
    ("gate_up_swiglu", 16, 1536, 768, 2): (16, 32, 128, 4, 4),
    ("gate_up_swiglu", 17, 1536, 768, 2): (32, 64, 128, 4, 4),
    ("gate_up_swiglu", 128, 7168, 2048, 2): (32, 64, 128, 4, 4),
    ("gate_up_swiglu", 512, 7168, 2048, 2): (64, 64, 64, 4, 4),
    ("gate_up_swiglu", 4096, 7168, 2048, 2): (128, 64, 64, 8, 3),
    ("gate_up_swiglu", 4096, 7168, 2048, 4): (128, 64, 32, 8, 3),
    # 16-row tiles to T = 2048, then 32-row tiles in M-major order (GROUP_M 1): the H200's
    # timings of the epilogue alone at each tile (kernels/tiles.py cites them).
    ("gate_up_epilogue", 64, 0, 768, 2): (16, 64, 16, 4, 1),
    ("gate_up_epilogue", 1024, 0, 2048, 2): (16, 64, 16, 4, 1),
    ("gate_up_epilogue", 2048, 0, 768, 2): (16, 64, 16, 4, 1),
    ("gate_up_epilogue", 2049, 0, 768, 2): (32, 64, 16, 4, 1, 1),
    ("gate_up_epilogue", 4096, 0, 2048, 4): (32, 64, 16, 4, 1, 1),
    ("down_proj", 1, 3072, 1536, 2): (16, 32, 128, 4, 4),
    ("down_proj", 64, 3072, 1536, 2): (32, 64, 128, 4, 4),
    ("down_proj", 129, 4096, 7168, 2): (64, 128, 64, 4, 4),
    ("down_proj", 1024, 4096, 7168, 2): (128, 128, 64, 8, 3),
    ("down_accumulate", 256, 0, 1536, 2): (32, 128, 16, 4, 1),
    ("down_accumulate", 257, 0, 7168, 2): (64, 128, 16, 4, 1),
}

INTERPRETER_TABLE = {
    ("lora_shrink", 1, 64, 0, 2): (16, 16, 64, 4, 1),
    ("lora_shrink", 33, 160, 0, 2): (64, 16, 256, 4, 1),
    ("lora_shrink", 100, 20, 0, 4): (64, 16, 32, 4, 1),
    ("gate_up_swiglu", 8, 64, 32, 2): (16, 32, 64, 4, 1),
    ("gate_up_swiglu", 100, 400, 200, 2): (64, 128, 256, 4, 1),
    ("gate_up_swiglu", 100, 400, 200, 4): (64, 128, 128, 4, 1),
    ("gate_up_epilogue", 33, 0, 72, 2): (64, 64, 16, 4, 1),
    ("down_proj", 1, 96, 64, 2): (16, 64, 128, 4, 1),
    ("down_accumulate", 5, 0, 300, 2): (16, 128, 16, 4, 1),
}


@pytest.mark.parametrize("caps,table", [(H200, H200_TABLE), (INTERPRETER, INTERPRETER_TABLE)], ids=["h200", "interpreter"])
def test_tiles_match_the_table(caps, table):
    for (kernel, T, K, N, nbytes), want in table.items():
        got = tiles.choose(kernel, caps, T=T, K=K, N=N, dtype_bytes=nbytes)
        want = want if len(want) == 6 else (*want, 8)
        assert (got.BLOCK_M, got.BLOCK_N, got.BLOCK_K, got.num_warps, got.num_stages, got.GROUP_M) == want, (kernel, T, K, N, nbytes)
        assert got.launch()["GROUP_M"] == got.GROUP_M


def test_gpu_tiles_do_not_depend_on_the_shapes_beyond_t():
    """On the GPU the tile follows T (and the dtype) alone; the interpreter's follows the shapes."""
    for kernel in tiles.KERNELS:
        assert tiles.choose(kernel, H200, T=64, K=1536, N=768) == tiles.choose(kernel, H200, T=64, K=7168, N=2048)
    assert tiles.choose("down_proj", INTERPRETER, T=8, K=64, N=32) != tiles.choose("down_proj", INTERPRETER, T=8, K=64, N=128)


def test_split_k_table():
    # (T, blocks, K) -> splits, for the H200 (132 SMs) and for a smaller GPU (sms=66)
    h200 = {(1, 2, 1536): 6, (1, 2, 7168): 28, (1, 1, 3072): 12, (64, 2, 7168): 17, (64, 8, 7168): 5,
            (256, 8, 1536): 3, (4096, 2, 7168): 2, (4096, 8, 7168): 1, (1, 0, 1536): 1, (1, 2, 200): 1}
    for (T, nb, K), want in h200.items():
        assert tiles.split_k(H200, T=T, blocks=nb, K=K) == want, (T, nb, K)
    small = DeviceCaps(interpreter=False, sms=66, capability=(8, 0))
    assert tiles.split_k(small, T=1, blocks=2, K=7168) == 28  # cdiv(66, 2) = 33, capped by K // 256 = 28
    assert tiles.split_k(small, T=64, blocks=8, K=7168) == 3  # cdiv(66, 32); the H200's is 5
    assert tiles.split_k(INTERPRETER, T=1, blocks=2, K=7168) == 3
    assert tiles.split_k(INTERPRETER, T=1, blocks=2, K=32) == 1


def test_unknown_kernel_is_refused():
    with pytest.raises(ValueError, match="unknown kernel"):
        tiles.choose("gemm", H200, T=1)


def test_launch_arguments():
    assert Tile(16, 32, 128, 4, 4).launch() == {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 128, "GROUP_M": 8,
                                                "num_warps": 4, "num_stages": 4}
    assert Tile(16, 16, 64, 4, 1).launch(n=False) == {"BLOCK_M": 16, "BLOCK_K": 64, "num_warps": 4, "num_stages": 1}
    assert Tile(32, 64, 16, 4, 1, GROUP_M=1).launch()["GROUP_M"] == 1


def test_every_kernel_asks_the_policy(monkeypatch):
    """Each wrapper launches with the tile the policy returns (a planted policy is what runs), on
    the CPU through the interpreter (compiled triton refuses CPU tensors; the H200's choices are
    the table above)."""
    from inkling_compat.kernels import _triton

    if not _triton.INTERPRET:
        pytest.skip("the interpreter's launches: triton runs compiled on this machine")
    from inkling_compat.kernels import down_proj as dp
    from inkling_compat.kernels import gate_up_swiglu as gu
    from inkling_compat.kernels import lora_shrink as ls
    from inkling_compat.kernels.routing import build_routing

    asked = []
    real = tiles.choose

    def planted(kernel, caps, **kw):
        asked.append(kernel)
        assert caps == tiles.device_caps(torch.device("cpu"), interpreter=True)
        return real(kernel, caps, **kw)

    monkeypatch.setattr(tiles, "choose", planted)
    _triton.clear_launch_caches()  # the wrappers keep their choices per shape: ask the planted policy
    T, H, n, F, S, R = 5, 32, 1, 16, 2, 4
    g = torch.Generator().manual_seed(0)
    x = torch.randn(T, H, generator=g)
    w13 = torch.randn(2 * n * F, H, generator=g)
    w2 = torch.randn(n * F, H, generator=g)
    gam = torch.rand(T, n, generator=g)
    routing = build_routing(torch.tensor([0, -1, 1, 0, 1]), S)
    ls.lora_shrink(x, torch.randn(S, 2 * R, H, generator=g), routing, R)
    act = gu.gate_up_swiglu(x, w13, gam, n, interleaved=True)
    gu.gate_up_swiglu(x, w13, gam, n, interleaved=True, y=x @ w13.T)
    out = dp.down_proj(act, w2)
    b = torch.randn(S, H, R, generator=g)
    dp.down_proj(act, w2, routing=routing, bridge=torch.randn(T, R, generator=g), b=b, out=out.clone(), accumulate=True)
    assert asked == ["lora_shrink", "gate_up_swiglu", "gate_up_epilogue", "down_proj", "down_accumulate"]
