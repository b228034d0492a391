"""Reference Triton runtime for the shared-sink MLP with multi-slot LoRA.

Installed as `inkling_compat.kernels` (PyPI has a distribution named `kernels`); only the
`runtime` extra's torch and triton are needed here, never on the checking path.

One operation per module, each with its torch reference beside it:

* `plan.py`           the batch plan: the routing computed once per batch (one launch), shared
                      by every layer's forward, with the all-unassigned flag (base path);
* `routing.py`        token -> slot grouping, one Triton launch (no host sync; none for one
                      token), per-slot counts and offsets, the group-aligned tiles of the fused kernels;
* `tiles.py`          the tile policy every kernel asks: a pure function of (device capabilities,
                      shapes, dtype), the H200's and the interpreter's choices tested on the CPU;
* `lora_shrink.py`    multi-slot LoRA shrink (gate/up and down sites, windowed per expert);
* `gate_up_swiglu.py` base gate/up GEMM + per-slot LoRA expand + gamma-weighted SwiGLU epilogue
                      (fused path: the gate/up shrink in its K loop as well);
* `down_proj.py`      down GEMM + per-slot LoRA expand, rows scattered back to token order
                      (fused path: the down shrink in its K loop as well);
* `sink.py`           the composed forward (Triton) and the same forward in plain torch;
* `capture.py`        the forward for a fixed T replayed from a CUDA graph (`sink.capture(T)`);
* `reference.py`      float64 reference of the whole forward from the spec (torch only);
* `_triton.py`        the one place triton is imported (interpreter mode without CUDA), and the
                      cached launch (a compiled kernel called directly while nothing it was
                      specialized on changes).
"""
