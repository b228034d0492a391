"""Compile the sink's kernels for sm_90 (H100/H200) on a machine without a GPU and report what
the compiler made of them: registers, stack (spills), shared memory and the SASS instruction mix
(HGMMA/HMMA matrix ops, LDGSTS async copies, LDL/STL local memory). No device time.

    TRITON_INTERPRET=0 python benchmarks/ops/compile_report.py [--tokens 1,64,1024] [--output f.json]

Each kernel is compiled through its own wrapper (the same arguments, specializations and
heuristic configs a GPU run gets), with Triton's driver replaced by a stand-in that names an
sm_90 target and a launch that only compiles (``warmup``). Tied to Triton's runtime internals
(``triton.runtime.driver``, ``JITFunction.run``): written against Triton 3.9. Shapes: the
benchmark's (1536, 4, 768) and (7168, 2, 2048), S = 8, r = R = 16, shared-outer interleaved.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

os.environ["TRITON_INTERPRET"] = "0"  # compiled kernels, whatever this machine has


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", default="1,64,1024")
    parser.add_argument("--output", default="")
    args = parser.parse_args(argv)

    import torch
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.runtime import driver
    from triton.runtime.jit import JITFunction

    class _Sm90:  # just enough of a driver for the JIT to build its binder and compile
        def get_current_target(self):
            return GPUTarget("cuda", 90, 32)

        def get_current_device(self):
            return 0

        def get_current_stream(self, device=None):
            return 0

        def get_active_torch_device(self):
            return torch.device("cpu")

    driver.set_active(_Sm90())
    compiled = []
    real_run = JITFunction.run

    def compile_only(self, *a, grid, warmup, **kw):
        kernel = real_run(self, *a, grid=grid, warmup=True, **kw)
        compiled.append((self.__name__, {k: kw[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages") if k in kw}, kernel))
        return kernel

    JITFunction.run = compile_only

    from inkling_compat.kernels import _triton, down_proj, gate_up_swiglu, lora_shrink, routing, sink

    for mod in (down_proj, gate_up_swiglu, lora_shrink, routing):
        mod.check_device = lambda *t: None  # CPU tensors stand in for CUDA ones (nothing runs)
    assert not _triton.INTERPRET

    bin_dir = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
    rows = []
    for H, n, F in ((1536, 4, 768), (7168, 2, 2048)):
        S, R = 8, 16
        bf = torch.bfloat16
        ops = sink.SinkOperands(torch.empty(n * 2 * F, H, dtype=bf), torch.empty(n * F, H, dtype=bf), n, True,
                                torch.empty(S, 1, 2 * R, H, dtype=bf), torch.empty(S, n, 2 * F, R, dtype=bf),
                                torch.empty(S, n, R, F, dtype=bf), torch.empty(S, 1, H, R, dtype=bf)).refresh()
        for T in (int(t) for t in args.tokens.split(",")):
            x, g = torch.empty(T, H, dtype=bf), torch.empty(T, n, dtype=bf)
            ids = torch.zeros(T, dtype=torch.int64)
            for path in ("base", "fused", "split") + (("one_token",) if T == 1 else ()):
                compiled.clear()
                rt = routing.build_routing(ids, S, ops.slot_active)
                if path == "base":
                    sink.sink_forward_triton(ops, x, g, None)
                elif path == "one_token":
                    sink.forward_fused(ops, x, g, routing.one_token(ids, S, ops.slot_active))
                else:
                    getattr(sink, f"forward_{path}")(ops, x, g, rt)
                for name, cfg, kernel in compiled:
                    if name == "_routing_kernel":
                        continue
                    row = {"H": H, "n": n, "F": F, "T": T, "path": path, "kernel": name, **cfg, **_resources(kernel, bin_dir)}
                    rows.append(row)
                    print(f"({H}, {n}, {F}) T={T:<5} {path:<9} {name:<24} {cfg} regs {row['regs']} stack {row['stack']} "
                          f"smem {row['shared']} {row['sass']}", flush=True)
    if args.output:
        with open(args.output, "w") as fh:
            json.dump(rows, fh, indent=2)
    return 0


def _resources(kernel, bin_dir: str) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as fh:
        fh.write(kernel.asm["cubin"])
    try:
        usage = subprocess.run([os.path.join(bin_dir, "cuobjdump"), "-res-usage", fh.name], capture_output=True, text=True).stdout
        sass = subprocess.run([os.path.join(bin_dir, "nvdisasm"), "-c", fh.name], capture_output=True, text=True).stdout
    finally:
        os.unlink(fh.name)
    regs, stack = re.search(r"REG:(\d+) STACK:(\d+)", usage).groups()
    mix = collections.Counter(re.findall(r"\b(HGMMA|HMMA|LDGSTS|UTMALDG|LDL|STL)\b", sass))
    return {"regs": int(regs), "stack": int(stack), "shared": kernel.metadata.shared, "sass": dict(sorted(mix.items()))}


if __name__ == "__main__":
    sys.exit(main())
