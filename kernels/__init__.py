"""Reference Triton runtime for the shared-sink MLP with multi-slot LoRA (issue 5).

Installed as `inkling_compat.kernels` (PyPI has a distribution named `kernels`); only the
`runtime` extra's torch and triton are needed here, never on the checking path.
"""
