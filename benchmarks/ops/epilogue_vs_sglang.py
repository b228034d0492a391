"""Where the graph base forward loses to sglang's: the base MLP split into its launches, ours beside
sglang 0.5.23's (``torch.mm``, its Triton ``silu_and_mul_triton``, ``torch.mm``), CUDA-graph
replay medians with the layers rotated past the L2, shared-interleaved layout (sglang's kernel
reads interleaved gate/up columns).

Rows per (H, n, F, T): our base forward as the runtime chooses it; our library-path base (two
``torch.mm`` and our SwiGLU epilogue, whatever T); the same two GEMMs around sglang's SwiGLU with
programmatic dependent launch (PDL, its default on sm_90) and without; each SwiGLU alone; each
GEMM alone; and our SwiGLU at each tile of ``--epilogue-tiles`` (BLOCK_M x BLOCK_N x GROUP_M, 4
warps, one stage; GROUP_M 1 walks the N tiles fastest, as sglang's grid does), the tile policy's
choice overridden for that row only, its output checked equal to the policy's. sglang's kernel is imported from the peer harness's verbatim copy (``build/peer``,
``../shared/bench/peer_sglang`` copied as is), never from the project.

    python benchmarks/ops/epilogue_vs_sglang.py [--peer build/peer/peer_sglang] [--tokens 1,16,64,1024,4096]
        [--epilogue-tiles 32x64x8,64x64x8,32x128x1,64x128x1] [--output FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import graph_us, layers_for, make_problem  # noqa: E402

SHAPES = ((1536, 4, 768), (7168, 2, 2048))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", default="build/peer/peer_sglang")
    parser.add_argument("--tokens", default="1,16,64,1024,4096")
    parser.add_argument("--epilogue-tiles", default="", help="BLOCK_MxBLOCK_NxGROUP_M,... (empty: none)")
    parser.add_argument("--output", default="epilogue_vs_sglang.json")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(args.peer).resolve()))
    import torch
    from sglang.kernels.ops.moe import inkling_moe

    from inkling_compat.kernels import sink, tiles
    from inkling_compat.kernels._triton import clear_launch_caches
    from inkling_compat.kernels.gate_up_swiglu import gate_up_swiglu

    pdl_default = inkling_moe.is_arch_support_pdl

    def sg_swiglu(y, g, n, pdl):
        inkling_moe.is_arch_support_pdl = pdl_default if pdl else (lambda: False)
        try:
            T = y.shape[0]
            return inkling_moe.silu_and_mul_triton(y.view(T * n, -1), g.reshape(-1)).view(T, -1)
        finally:
            inkling_moe.is_arch_support_pdl = pdl_default

    policy = tiles.choose

    def ours_swiglu_at(tile, y, g, n, x, w13_lin, out):
        """Our epilogue with the tile policy's gate_up_epilogue choice replaced by ``tile``."""
        bm, bn, gm = tile

        class _Fixed:
            @staticmethod
            def launch(**_):
                return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 16, "GROUP_M": gm, "num_warps": 4, "num_stages": 1}

        def choose(kernel, caps, **kw):
            return _Fixed() if kernel == "gate_up_epilogue" else policy(kernel, caps, **kw)

        # The wrappers keep their tile per shape: forget it on both sides of the swap.
        tiles.choose = choose
        clear_launch_caches()
        try:
            return gate_up_swiglu(x, w13_lin, g, n, interleaved=True, y=y, out=out)
        finally:
            tiles.choose = policy
            clear_launch_caches()

    epilogue_tiles = [tuple(int(v) for v in t.split("x")) for t in args.epilogue_tiles.split(",") if t]
    rows = []
    for H, n, F in SHAPES:
        for T in (int(t) for t in args.tokens.split(",")):
            per_layer = 2 * 3 * n * F * H
            problems = [make_problem(H, n, F, T, shared_outer=True, interleaved=True, seed=i) for i in range(layers_for(per_layer))]
            ops = [p.operands() for p in problems]
            ys = [torch.mm(p.x, o.w13_lin.t()) for p, o in zip(problems, ops)]
            acts = [torch.empty((T, n * F), dtype=p.x.dtype, device=p.x.device) for p in problems]
            ours_act = gate_up_swiglu(problems[0].x, ops[0].w13_lin, problems[0].gammas, n, interleaved=True, y=ys[0])
            sg_act = sg_swiglu(ys[0], problems[0].gammas, n, True)
            diff = (ours_act.float() - sg_act.float()).norm() / sg_act.float().norm()
            paths = {
                "ours_base": lambda i: sink.sink_forward_triton(ops[i], problems[i].x, problems[i].gammas, None),
                "ours_base_library": lambda i: sink.forward_blas(ops[i], problems[i].x, problems[i].gammas, None),
                "sglang_base_pdl": lambda i: torch.mm(sg_swiglu(torch.mm(problems[i].x, ops[i].w13_lin.t()), problems[i].gammas, n, True), ops[i].w2_lin),
                "sglang_base_no_pdl": lambda i: torch.mm(sg_swiglu(torch.mm(problems[i].x, ops[i].w13_lin.t()), problems[i].gammas, n, False), ops[i].w2_lin),
                "ours_swiglu": lambda i: gate_up_swiglu(problems[i].x, ops[i].w13_lin, problems[i].gammas, n, interleaved=True, y=ys[i], out=acts[i]),
                "sglang_swiglu_pdl": lambda i: sg_swiglu(ys[i], problems[i].gammas, n, True),
                "sglang_swiglu_no_pdl": lambda i: sg_swiglu(ys[i], problems[i].gammas, n, False),
                "mm_gate_up": lambda i: torch.mm(problems[i].x, ops[i].w13_lin.t()),
                "mm_down": lambda i: torch.mm(acts[i], ops[i].w2_lin),
            }
            row = {"H": H, "n": n, "F": F, "T": T, "layers": len(problems), "swiglu_rel_diff": float(diff)}
            for tile in epilogue_tiles:
                tag = "x".join(map(str, tile))
                got = ours_swiglu_at(tile, ys[0], problems[0].gammas, n, problems[0].x, ops[0].w13_lin, None)
                row[f"ours_swiglu_{tag}_equal"] = bool(torch.equal(got, ours_act))
                paths[f"ours_swiglu_{tag}"] = (lambda i, tile=tile: ours_swiglu_at(tile, ys[i], problems[i].gammas, n, problems[i].x,
                                                                                   ops[i].w13_lin, acts[i]))
            for name, fn in paths.items():
                row[name + "_us"] = round(graph_us([lambda i=i, fn=fn: fn(i) for i in range(len(problems))]), 2)
            rows.append(row)
            print("| " + " | ".join(f"{row[k]}" for k in row) + " |", flush=True)
            problems = ops = ys = acts = paths = None
            torch.cuda.empty_cache()
    keys = list(rows[0])
    print("\n| " + " | ".join(keys) + " |\n|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(f"{row.get(k, ''):.3g}" if isinstance(row.get(k), float) else f"{row.get(k, '')}" for k in keys) + " |")
    props = torch.cuda.get_device_properties(0)
    Path(args.output).write_text(json.dumps({"gpu": props.name, "torch": torch.__version__, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
