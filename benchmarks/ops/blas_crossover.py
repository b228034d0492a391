"""Where the base GEMMs should go to the library: the shared-sink forward with the Triton K loops
(``sink.BLAS_MIN_T`` past T) against the library-GEMM path (torch.mm for the base, Triton for the
LoRA and the epilogues), base and LoRA, over a sweep of T. CUDA-graph medians, layers rotated
past the L2; prints a table and writes JSON. The dispatch thresholds in kernels/sink.py come
from this table (docs/performance.md).

    python benchmarks/ops/blas_crossover.py [--tokens 1,2,4,8,16,32,64,128] [--output FILE]
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
    import torch

    from inkling_compat.kernels import sink

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", default="1,2,4,8,16,32,64,128")
    parser.add_argument("--layouts", default="shared-interleaved")
    parser.add_argument("--output", default="blas_crossover.json")
    args = parser.parse_args(argv)
    layouts = {"shared-interleaved": (True, True), "perexpert-contiguous": (False, False)}
    rows = []
    for layout in args.layouts.split(","):
        shared, interleaved = layouts[layout]
        for H, n, F in SHAPES:
            for T in (int(t) for t in args.tokens.split(",")):
                per_layer = 2 * 3 * n * F * H
                problems = [make_problem(H, n, F, T, shared_outer=shared, interleaved=interleaved, seed=i)
                            for i in range(layers_for(per_layer))]
                ops = [p.operands() for p in problems]
                row = {"layout": layout, "H": H, "n": n, "F": F, "T": T}
                saved = sink.BLAS_MIN_T, sink.BLAS_MIN_T_BASE
                try:
                    for name, threshold in (("triton", 1 << 30), ("blas", 1)):
                        sink.BLAS_MIN_T = sink.BLAS_MIN_T_BASE = threshold
                        for kind in ("base", "lora"):
                            calls = [lambda o=o, p=p, k=kind: sink.sink_forward_triton(o, p.x, p.gammas, p.slot_ids if k == "lora" else None)
                                     for o, p in zip(ops, problems)]
                            row[f"{name}_{kind}_us"] = round(graph_us(calls), 2)
                finally:
                    sink.BLAS_MIN_T, sink.BLAS_MIN_T_BASE = saved
                rows.append(row)
                print(f"| {layout} | ({H}, {n}, {F}) | {T} | triton base {row['triton_base_us']} lora {row['triton_lora_us']} "
                      f"| blas base {row['blas_base_us']} lora {row['blas_lora_us']} |", flush=True)
                del problems, ops
                torch.cuda.empty_cache()
    props = torch.cuda.get_device_properties(0)
    Path(args.output).write_text(json.dumps({"gpu": props.name, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
