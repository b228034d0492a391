"""The tile policy of every kernel: one pure function of (device capabilities, shapes, dtype).

Each kernel wrapper asks :func:`choose` for its launch configuration (block sizes, warps,
pipeline stages) and :func:`split_k` for the shrink's K split. Nothing here reads the device or
the environment: the capabilities come in as a :class:`DeviceCaps` (``device_caps`` builds it
once per device; :data:`INTERPRETER` stands for Triton's CPU interpreter, :data:`H200` for the
GPU the figures in docs/performance.md were measured on), so a CPU test can ask for the H200's
choices and compare them with a table, and the interpreter's choices are one more row of it.

The GPU tiles are those measured on an H200 (benchmarks/bench_runtime.py, benchmarks/ops/):
16-row tiles while T <= 64 (tokens sorted by slot: small tiles hold fewer slot groups), wider
ones as T grows; float32 storage halves BLOCK_K and keeps at most 3 stages (shared memory). The
interpreter takes one tile covering the test shapes (up to 64 rows) and one stage: it runs in
numpy, where fewer, larger tiles are faster and pipelining means nothing.

The wrappers' host-side arithmetic on sizes (:func:`cdiv`, :func:`next_power_of_2`, :func:`pow2`)
is here too, in plain Python integers, equal to triton's helpers of the same names.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

KERNELS = ("lora_shrink", "gate_up_swiglu", "gate_up_epilogue", "down_proj", "down_accumulate")


@dataclass(frozen=True)
class DeviceCaps:
    """What the policy reads of a device: Triton interpreter or not, SM count, compute capability."""

    interpreter: bool
    sms: int = 132
    capability: tuple[int, int] = (9, 0)


INTERPRETER = DeviceCaps(interpreter=True, sms=132, capability=(0, 0))
H200 = DeviceCaps(interpreter=False, sms=132, capability=(9, 0))


@dataclass(frozen=True)
class Tile:
    BLOCK_M: int
    BLOCK_N: int
    BLOCK_K: int
    num_warps: int = 4
    num_stages: int = 4
    # M tiles per group of the grouped program order (L2 reuse of the weight tiles); 1: the
    # programs walk the N tiles of one M tile first.
    GROUP_M: int = 8

    def launch(self, *, n: bool = True) -> dict:
        """Keyword arguments of the Triton launch (``n`` False: the kernel has no BLOCK_N)."""
        out = {"BLOCK_M": self.BLOCK_M, "BLOCK_K": self.BLOCK_K, "num_warps": self.num_warps, "num_stages": self.num_stages}
        if n:
            out["BLOCK_N"] = self.BLOCK_N
            out["GROUP_M"] = self.GROUP_M
        return out


def cdiv(x: int, y: int) -> int:
    """``ceil(x / y)`` as ``triton.cdiv`` computes it. The kernel wrappers do their host-side
    arithmetic with these plain functions: triton's are ``constexpr_function`` objects whose
    every call goes through its JIT wrapper (1,200 calls: 5 ms under cProfile on the H200 host,
    benchmarks/results/host_cost_630c186.json)."""
    return (x + (y - 1)) // y


def next_power_of_2(n: int) -> int:
    """Smallest power of two >= ``n``, 0 for n <= 0: ``triton.next_power_of_2`` for 0 <= n <= 2**64."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def pow2(value: int, minimum: int = 16) -> int:
    """Smallest power of two >= value, at least ``minimum`` (tl.dot needs dimensions >= 16)."""
    v = max(int(value), 1)
    return max(minimum, 1 << (v - 1).bit_length())


def choose(kernel: str, caps: DeviceCaps, *, T: int, K: int = 0, N: int = 0, dtype_bytes: int = 2) -> Tile:
    """The tile of ``kernel`` for T tokens. K: the reduction depth (H for gate/up, n*F for down,
    the shrink's A width); N: the output features per expert (F for gate/up, H for down)."""
    if kernel not in KERNELS:
        raise ValueError(f"tiles: unknown kernel {kernel!r} (known: {', '.join(KERNELS)})")
    if caps.interpreter:
        tile = _interpreter(kernel, T, K, N)
    else:
        tile = _gpu(kernel, T)
    if dtype_bytes > 2 and kernel in ("lora_shrink", "gate_up_swiglu", "down_proj"):
        # float32 tiles: half the K depth, at most 3 stages (shared memory)
        tile = replace(tile, BLOCK_K=max(32, tile.BLOCK_K // 2), num_stages=min(tile.num_stages, 3))
    return tile


def _interpreter(kernel: str, T: int, K: int, N: int) -> Tile:
    bm = min(64, pow2(T))
    if kernel == "lora_shrink":
        return Tile(bm, 16, min(256, pow2(K, 32)), 4, 1)
    if kernel == "gate_up_swiglu":
        return Tile(bm, min(128, pow2(N)), min(256, pow2(K, 32)), 4, 1)
    if kernel == "gate_up_epilogue":
        return Tile(bm, min(64, pow2(N)), 16, 4, 1)
    if kernel == "down_proj":
        return Tile(bm, min(128, pow2(N)), min(256, pow2(K, 32)), 4, 1)
    return Tile(bm, min(128, pow2(N)), 16, 4, 1)  # down_accumulate


def _gpu(kernel: str, T: int) -> Tile:
    if kernel == "lora_shrink":
        if T <= 64:  # tokens are sorted by slot: 16-row tiles hold fewer slot groups
            return Tile(16, 16, 128, 4, 4)
        if T <= 256:
            return Tile(32, 16, 128, 4, 4)
        return Tile(64, 16, 64, 4, 4)
    if kernel == "gate_up_swiglu":
        if T <= 16:
            return Tile(16, 32, 128, 4, 4)
        if T <= 128:
            return Tile(32, 64, 128, 4, 4)
        if T <= 512:
            return Tile(64, 64, 64, 4, 4)
        return Tile(128, 64, 64, 8, 3)
    if kernel == "gate_up_epilogue":
        # No K loop: one pass over y (2.3 TB/s at (1536, 4, 768) T = 1024, y read and the
        # activation written). More, smaller programs were faster: 16-row tiles up to T = 2048
        # (T = 64 and 1024: 2.7-3.1 and 7.8-8.3 us against 3.7-3.9 and 9.0-9.4 at the 32- and
        # 64-row tiles), 32-row tiles in M-major order above (T = 4096: 22.8-23.3 us against
        # 24.9-25.4 at 64 rows). Three runs on one H200 (benchmarks/ops/epilogue_vs_sglang.py, raw
        # benchmarks/results/epilogue_vs_sglang_017d670_*.json). Timed on the base epilogue only:
        # the LoRA epilogue (y with the expand per slot group) shares this row untimed per tile,
        # and its forwards at T >= 1024 ran 4-7 % slower after the move (docs/performance.md).
        if T <= 2048:
            return Tile(16, 64, 16, 4, 1)
        return Tile(32, 64, 16, 4, 1, GROUP_M=1)
    if kernel == "down_proj":
        if T <= 16:
            return Tile(16, 32, 128, 4, 4)
        if T <= 128:
            return Tile(32, 64, 128, 4, 4)
        if T <= 512:
            return Tile(64, 128, 64, 4, 4)
        return Tile(128, 128, 64, 8, 3)
    return Tile(32 if T <= 256 else 64, 128, 16, 4, 1)  # down_accumulate: read-add-write of adapter rows


def split_k(caps: DeviceCaps, *, T: int, blocks: int, K: int, block_m: int | None = None, max_split: int = 32) -> int:
    """K splits of the shrink: enough programs to cover the SMs when the (M tile, block) grid is
    small, each range at least 256 deep; 1 once the grid alone fills the chip. The interpreter
    splits in 3 from K = 64 (so the CPU tests run the split reduction at their shapes)."""
    if caps.interpreter:
        return 1 if K < 64 else 3
    if blocks <= 0:
        return 1
    bm = choose("lora_shrink", caps, T=T, K=K).BLOCK_M if block_m is None else block_m
    programs = -(-max(T, 1) // bm) * blocks
    if programs >= caps.sms:
        return 1
    return max(1, min(max_split, -(-caps.sms // programs), K // 256))


_CAPS: dict = {}


def device_caps(device, *, interpreter: bool) -> DeviceCaps:
    """The capabilities of ``device`` (a torch device), read once per device index."""
    if interpreter:
        return INTERPRETER
    index = device.index if device.index is not None else -1
    caps = _CAPS.get(index)
    if caps is None:
        import torch

        props = torch.cuda.get_device_properties(device)
        caps = _CAPS[index] = DeviceCaps(interpreter=False, sms=props.multi_processor_count,
                                         capability=(props.major, props.minor))
    return caps
