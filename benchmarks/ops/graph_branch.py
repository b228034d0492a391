"""A captured LoRA forward that branches at replay (CUDA-graph conditional nodes on the plan's
flag) against one that keeps its LoRA launches, on a CUDA GPU: what the branch costs a LoRA
batch and saves an all-unassigned one, per shape and T, beside the base graph.

    python benchmarks/ops/graph_branch.py --output graph_branch.json

For the peer benchmark's shapes ((1536, 4, 768) and (7168, 2, 2048), S = 8, r = 16, both layouts)
and T in {1, 64, 1024, 4096}: CUDA-graph replay medians (layers rotated past the L2, one graph
per path as ``common.graph_us`` captures it) of the base forward, the LoRA forward and the
all-unassigned forward, with ``sink.GRAPH_BRANCH_MIN_T`` off and at 1; each graph's layer-0
output against the eager forward of the same ids. Prints a table; writes JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="graph_branch.json")
    parser.add_argument("--tokens", default="1,64,1024,4096")
    args = parser.parse_args(argv)
    import torch

    from common import graph_us, layers_for, make_problem
    from inkling_compat.kernels import sink
    from inkling_compat.kernels.reference import relative_error

    api = hasattr(torch.cuda.CUDAGraph, "get_currently_capturing_graph") and hasattr(
        torch.cuda.CUDAGraph, "begin_capture_to_if_node")
    result = {"torch": torch.__version__, "conditional_api": api, "rows": []}
    print(f"torch {torch.__version__}, conditional-node API: {api}")
    print("| layout | (H, n, F) | T | base | LoRA | LoRA branched | all -1 | all -1 branched | all -1/base | branched | LoRA/base | branched | err |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for H, n, F in ((1536, 4, 768), (7168, 2, 2048)):
        for layout, shared, inter in (("shared-interleaved", True, True), ("perexpert-contiguous", False, False)):
            for T in (int(t) for t in args.tokens.split(",")):
                per_layer = 2 * 3 * n * F * H + 2 * 2 * T * H
                probs = [make_problem(H, n, F, T, shared_outer=shared, interleaved=inter, seed=i)
                         for i in range(layers_for(per_layer))]
                ops = [p.operands() for p in probs]
                ids = probs[0].slot_ids.clone()
                none = torch.full_like(ids, -1)

                def calls(which):
                    return [lambda o=o, p=p: sink.sink_forward_triton(o, p.x, p.gammas, which) for o, p in zip(ops, probs)]

                row = {"layout": layout, "H": H, "n": n, "F": F, "T": T, "us": {}, "err": {}}
                row["us"]["base"] = graph_us(calls(None))
                for branch in (None, 1):
                    sink.GRAPH_BRANCH_MIN_T = branch
                    sfx = "" if branch is None else "_branched"
                    row["us"]["lora" + sfx] = graph_us(calls(ids))
                    row["us"]["all_unassigned" + sfx] = graph_us(calls(none))
                    # correctness of the captured forward against eager, both ids, on layer 0
                    g = torch.cuda.CUDAGraph()
                    o, p = ops[0], probs[0]
                    live = ids.clone()
                    sink.sink_forward_triton(o, p.x, p.gammas, live)
                    torch.cuda.synchronize()
                    with torch.cuda.graph(g):
                        out = sink.sink_forward_triton(o, p.x, p.gammas, live)
                    for name, new in (("lora", ids), ("all_unassigned", none)):
                        live.copy_(new)
                        g.replay()
                        torch.cuda.synchronize()
                        ref = sink.sink_forward_triton(o, p.x, p.gammas, new.clone())
                        row["err"][name + sfx] = relative_error(out, ref)
                    del g
                sink.GRAPH_BRANCH_MIN_T = None
                u = row["us"]
                r = lambda a, b: u[a] / u[b]
                print(f"| {layout} | ({H}, {n}, {F}) | {T} | {u['base']:.1f} | {u['lora']:.1f} | {u['lora_branched']:.1f} | "
                      f"{u['all_unassigned']:.1f} | {u['all_unassigned_branched']:.1f} | {r('all_unassigned', 'base'):.3f} | "
                      f"{r('all_unassigned_branched', 'base'):.3f} | {r('lora', 'base'):.3f} | {r('lora_branched', 'base'):.3f} | "
                      f"{max(row['err'].values()):.1e} |", flush=True)
                result["rows"].append(row)
                del probs, ops
                torch.cuda.empty_cache()
    Path(args.output).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
