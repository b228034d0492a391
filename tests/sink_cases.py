"""Random shared-sink problems for the kernel tests (CPU interpreter and GPU alike).

Never zeros: base weights, pool factors (up to each slot's true rank), inputs and gammas are
random; padded pool rows/columns are zero as the pool keeps them. The LoRA factors are scaled so
that the LoRA delta is a large part of the output, so a wrong delta cannot hide under the
tolerance (tests assert that share).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from hypothesis import strategies as st

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass(frozen=True)
class Case:
    T: int
    n: int
    H: int
    F: int
    S: int
    R: int
    ranks: tuple[int, ...]  # true rank per slot (0 = empty slot)
    shared_outer: bool
    interleaved: bool
    slot_mode: str  # "none" (slot_ids None), "all-minus-one", "single", "mixed"
    dtype: str = "bfloat16"
    seed: int = 0


@st.composite
def cases(draw, *, max_T: int = 100, max_H: int = 160, max_F: int = 72, max_n: int = 3, dtypes=("bfloat16", "float32")) -> Case:
    n = draw(st.integers(1, max_n))
    S = draw(st.integers(1, 6))
    R = draw(st.integers(1, 64))
    ranks = tuple(draw(st.integers(0, R)) for _ in range(S))
    if not any(ranks):
        ranks = (R,) + ranks[1:]
    # T: a single token, an odd count, or more than one 64-row tile.
    T = draw(st.one_of(st.just(1), st.integers(1, 31).map(lambda k: 2 * k + 1), st.integers(65, max(65, max_T))))
    return Case(
        T=T,
        n=n,
        H=draw(st.integers(8, max_H)),
        F=draw(st.integers(4, max_F)),
        S=S,
        R=R,
        ranks=ranks,
        shared_outer=draw(st.booleans()),
        interleaved=draw(st.booleans()),
        slot_mode=draw(st.sampled_from(["mixed", "mixed", "single", "all-minus-one", "none"])),
        dtype=draw(st.sampled_from(dtypes)),
        seed=draw(st.integers(0, 2**16)),
    )


@dataclass
class Problem:
    case: Case
    w13: torch.Tensor  # [n, 2F, H] in the case's layout
    w2: torch.Tensor  # [n, H, F]
    pool: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]
    x: torch.Tensor
    gammas: torch.Tensor
    slot_ids: torch.Tensor | None

    def operands(self):
        from inkling_compat.kernels.reference import linearize
        from inkling_compat.kernels.sink import SinkOperands

        w13_lin, w2_lin = linearize(self.w13, self.w2)
        active = torch.tensor([r > 0 for r in self.case.ranks], device=self.x.device)
        return SinkOperands(w13_lin, w2_lin, self.case.n, self.case.interleaved, *self.pool, slot_active=active).refresh()

    def reference(self, *, lora: bool = True, dtype=torch.float64, storage=None, round_pre_activation: bool = False):
        from inkling_compat.kernels.reference import sink_forward_reference

        return sink_forward_reference(
            self.x, self.gammas, self.w13, self.w2, interleaved=self.case.interleaved,
            pool=self.pool if lora else None, slot_ids=self.slot_ids if lora else None, dtype=dtype,
            storage=storage, round_pre_activation=round_pre_activation,
        )

    def bound(self, *, lora: bool = True, library: bool | None = None) -> float:
        """What the whole sink's output may differ from ``reference(lora=lora)`` (norm-wise):
        float32 storage 1e-5; bf16 the 1e-2 bound, or 1.25x what the bf16 storage roundings
        alone cost on these inputs where that is more (kernels/reference.py: judged_tolerance).
        ``library``: the output comes from the library-GEMM path, which also stores the gate/up
        pre-activations (None: the path ``sink_forward_triton`` takes for this case here)."""
        from inkling_compat.kernels import sink
        from inkling_compat.kernels.reference import judged_tolerance, relative_error

        if self.case.dtype != "bfloat16":
            return tolerance(self.case)
        if library is None:
            with_lora = lora and self.slot_ids is not None
            # eager, the base takes the library path at every T on CUDA (sink.use_blas)
            library = DEVICE.type == "cuda" and (self.case.T >= sink.BLAS_MIN_T if with_lora else True)
        ref = self.reference(lora=lora)
        stored = self.reference(lora=lora, storage=self.x.dtype, round_pre_activation=library)
        return judged_tolerance(tolerance(self.case), relative_error(stored, ref))

    def between_paths(self) -> float:
        """What the library-GEMM path's output may differ from the split path's (norm-wise,
        relative to the split path's): the two round differently (the library path also stores
        the gate/up pre-activations), so neither is the other's reference; each is held to its
        own :meth:`bound` of the float64 reference, which bounds their distance by the triangle
        inequality, over the split output's norm (at least ``1 - bound`` of the reference's)."""
        library, split = self.bound(library=True), self.bound(library=False)
        return (library + split) / (1.0 - split)


def make_problem(case: Case, device: torch.device = DEVICE, lora_scale: float = 1.0) -> Problem:
    g = torch.Generator().manual_seed(case.seed)
    dtype = getattr(torch, case.dtype)
    T, n, H, F, S, R = case.T, case.n, case.H, case.F, case.S, case.R
    E = 1 if case.shared_outer else n

    def randn(*shape, std=1.0):
        return torch.randn(*shape, generator=g) * std

    w13 = randn(n, 2 * F, H, std=H ** -0.5)
    w2 = randn(n, H, F, std=F ** -0.5)
    a_gu = torch.zeros(S, E, 2 * R, H)
    b_gu = torch.zeros(S, n, 2 * F, R)
    a_dn = torch.zeros(S, n, R, F)
    b_dn = torch.zeros(S, E, H, R)
    for s, r in enumerate(case.ranks):
        if r == 0:
            continue
        a_gu[s, :, :r] = randn(E, r, H, std=H ** -0.5)
        a_gu[s, :, R:R + r] = randn(E, r, H, std=H ** -0.5)
        b_gu[s, :, :, :r] = randn(n, 2 * F, r, std=lora_scale * r ** -0.5)
        a_dn[s, :, :r] = randn(n, r, F, std=F ** -0.5)
        b_dn[s, :, :, :r] = randn(E, H, r, std=lora_scale * r ** -0.5)
    x = randn(T, H)
    gammas = torch.rand(T, n, generator=g) + 0.05
    filled = [s for s, r in enumerate(case.ranks) if r > 0]
    if case.slot_mode == "none":
        slots = None
    elif case.slot_mode == "all-minus-one":
        slots = torch.full((T,), -1, dtype=torch.int64)
    elif case.slot_mode == "single":
        slots = torch.full((T,), filled[0], dtype=torch.int64)
    else:  # every slot (empty ones too) and -1, shuffled
        slots = torch.randint(-1, S, (T,), generator=g)
    to = lambda t: t.to(device=device, dtype=dtype)  # noqa: E731
    return Problem(
        case=case,
        w13=to(w13), w2=to(w2),
        pool=tuple(to(t) for t in (a_gu, b_gu, a_dn, b_dn)),
        x=to(x), gammas=to(gammas),
        slot_ids=None if slots is None else slots.to(device),
    )


def tolerance(case: Case) -> float:
    """bf16 operands: 1e-2 (the brief's bound). float32: IEEE float32 dots (the kernels ask for
    them for float32 storage, interpreted or compiled). One kernel rounds once, at its output
    (2**-8 relative at most per element), so an op stays under 1e-2 on any input; the whole sink
    rounds four times in a chain and is held to :meth:`Problem.bound`."""
    if case.dtype == "bfloat16":
        return 1e-2
    return 1e-5


# Rows in the routing's sorted order and back, and NaN-poisoned outputs (a kernel that leaves a
# row unwritten then fails its comparison), for the per-op kernel tests.
def sorted_rows(t: torch.Tensor, routing) -> torch.Tensor:
    return t[routing.order.long()]


def unsorted_rows(t: torch.Tensor, routing) -> torch.Tensor:
    out = torch.empty_like(t)
    out[routing.order.long()] = t
    return out


def nan_filled(shape, dtype, device=DEVICE) -> torch.Tensor:
    return torch.full(shape, math.nan, dtype=dtype, device=device)
