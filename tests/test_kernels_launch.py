"""The cached launch (kernels/_triton.CachedLaunch): its key holds everything triton specializes
on, so a hit never runs a kernel compiled for other arguments. The key on the CPU; on a GPU,
forwards launched through the cache equal those launched through triton's own path."""

from __future__ import annotations

import pytest
import torch

from inkling_compat.kernels import _triton
from inkling_compat.kernels.down_proj import _down_proj_kernel
from inkling_compat.kernels.routing import _routing_kernel

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def _key(launch, args, meta, monkeypatch):
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    return launch.key(args, meta)


def test_key_follows_what_triton_specializes_on(monkeypatch):
    launch = _triton.CachedLaunch(_routing_kernel)
    assert launch.constexprs == ("HAS_ACTIVE", "CHUNK", "BLOCK_KEY") and launch.n_args == 11
    buf = torch.zeros(64, dtype=torch.int32)
    ids = torch.zeros(16, dtype=torch.int64)
    meta = {"HAS_ACTIVE": False, "CHUNK": 16, "BLOCK_KEY": 16, "num_warps": 4}

    def args(ids=ids, T=16, S=8, out=buf):
        return (ids, ids, out, out, out, out, out, out, out, T, S)

    base = _key(launch, args(), meta, monkeypatch)
    assert launch.ptrs == tuple(range(9))
    assert _key(launch, args(T=9), meta, monkeypatch) == base  # T: do_not_specialize
    assert _key(launch, args(S=16), meta, monkeypatch) != base  # any other int by value
    assert _key(launch, args(out=buf[1:]), meta, monkeypatch) != base  # 4-byte offset: not 16-aligned
    assert _key(launch, args(out=buf[4:]), meta, monkeypatch) == base  # 16-byte offset: aligned
    assert _key(launch, args(ids=ids.to(torch.int32)), meta, monkeypatch) != base  # dtype
    assert _key(launch, args(), {**meta, "num_warps": 8}, monkeypatch) != base  # launch options
    assert _key(launch, args(), {**meta, "CHUNK": 32}, monkeypatch) != base  # constexprs


def test_interpreter_never_caches():
    assert not _triton.FAST_LAUNCH or not _triton.INTERPRET
    launch = _triton.CachedLaunch(_down_proj_kernel)
    names = [name for name, _, _ in _triton._params(_down_proj_kernel)]
    assert {names[i] for i in launch.skip} == {"T", "TB"}
    assert launch.constexprs[-1] == "GROUP_M" and len(names) == launch.n_args + len(launch.constexprs)


@cuda
@pytest.mark.parametrize("T", [1, 64, 1024])
@pytest.mark.parametrize("shared_outer", [True, False])
def test_cached_launches_equal_tritons_own(T, shared_outer, monkeypatch):
    from inkling_compat.kernels import sink
    from sink_cases import Case, make_problem

    case = Case(T=T, n=4, H=1536, F=768, S=8, R=16, ranks=(16,) * 8, shared_outer=shared_outer, interleaved=shared_outer,
                slot_mode="mixed", seed=T)
    p = make_problem(case, lora_scale=0.5)
    ops = p.operands()
    outs = []
    for fast in (True, True, False):
        monkeypatch.setattr(_triton, "FAST_LAUNCH", fast)
        outs.append((sink.sink_forward_triton(ops, p.x, p.gammas, p.slot_ids.clone()),
                     sink.sink_forward_triton(ops, p.x, p.gammas, None)))
    for a, b in zip(outs[0] + outs[1], outs[2] + outs[2]):
        assert torch.equal(a, b)
    # an input 2 bytes off 16-byte alignment: compiled (and cached) apart, the same result as
    # triton's own launch of it (cuBLAS, on the library path, takes another algorithm for it)
    big = torch.empty(T * case.H + 1, dtype=p.x.dtype, device="cuda")
    x = big[1:].view(T, case.H)
    x.copy_(p.x)
    monkeypatch.setattr(_triton, "FAST_LAUNCH", False)
    want = sink.sink_forward_triton(ops, x, p.gammas, None)
    monkeypatch.setattr(_triton, "FAST_LAUNCH", True)
    for _ in range(2):
        assert torch.equal(sink.sink_forward_triton(ops, x, p.gammas, None), want)


def test_a_hit_launches_with_the_constexprs_of_its_key(monkeypatch):
    """The hit path on the CPU, the compiled kernel replaced by a recorder: the first call goes
    through ``fn[grid]``, later ones straight to the kept kernel with meta's constexprs appended in
    declaration order; other constexprs are another key; a tensor among the scalar arguments is
    keyed by dtype and alignment, never by identity."""
    launched = []

    class Kernel:
        def __getitem__(self, grid):
            return lambda *args: launched.append((grid, args))

    class Jit:
        def __init__(self):
            self.binds = 0

        def __getitem__(self, grid):
            def bind(*args, **meta):
                self.binds += 1
                return Kernel()
            return bind

    launch = _triton.CachedLaunch(_routing_kernel)
    jit = launch.fn = Jit()
    monkeypatch.setattr(_triton, "FAST_LAUNCH", True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    buf = torch.zeros(64, dtype=torch.int32)
    args = (buf,) * 9 + (16, 8)
    meta = {"HAS_ACTIVE": False, "CHUNK": 16, "BLOCK_KEY": 16, "num_warps": 4}
    launch((1,), args, meta)
    assert jit.binds == 1 and launched == []
    launch((2,), args, dict(meta))
    assert jit.binds == 1 and launched == [((2, 1, 1), args + (False, 16, 16))]
    launch((1,), args, {**meta, "CHUNK": 32})
    assert jit.binds == 2
    with_tensor = args[:10] + (torch.tensor(8),)
    assert launch.key(with_tensor, meta)[0] == ((torch.int64, True),)  # T is do_not_specialize: not keyed


@pytest.mark.skipif(not _triton.INTERPRET, reason="Triton's interpreter only")
def test_an_interpreted_launch_patches_the_language_once_per_module(monkeypatch):
    """The routing kernel calls triton's helpers (tl.sum, tl.cumsum, ...) in every program
    instance: the language is patched for the launch, and once more for the module those helpers
    see (triton.language.core), however many program instances run (triton alone patches at every
    helper call: 81 rounds for 63 tokens); after the launch tl is triton's own again."""
    from triton.runtime import interpreter

    from inkling_compat.kernels.routing import build_routing, build_routing_torch

    if not getattr(interpreter._patch_lang, "_once_per_launch", False):
        pytest.skip("this triton's interpreter has no restorable patch scope")
    patched = []
    original = interpreter._patch_builtin
    monkeypatch.setattr(interpreter, "_patch_builtin", lambda pkg, *rest: (patched.append(pkg), original(pkg, *rest))[1])
    load = _triton.tl.load
    build_routing(torch.tensor([0, 1]), 3, None)  # (a helper's module gains tl at its first call)
    counts = []
    for repeat in (9, 90):
        patched.clear()
        ids = torch.tensor([2, 0, -1, 2, 1, 0, 2] * repeat)
        routed = build_routing(ids, 3, None)
        assert torch.equal(routed.group_start, build_routing_torch(ids, 3, None).group_start)
        counts.append(len(patched))
    # the launch: tl, its tensor, tl.math, descriptors; the helpers: tl and triton.language.core
    assert counts[0] == counts[1] and 0 < counts[0] <= 4 + 6, counts
    assert _triton.tl.load is load


tl = _triton.tl


@_triton.triton.jit
def _int32_products_kernel(out_ptr, X, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, (offs + X) * X * X - X)  # wraps around int32 for X = 2**20


@pytest.mark.skipif(not _triton.INTERPRET, reason="the interpreter's own options")
def test_the_interpreter_skips_only_overflow_checks_nothing_asserts(monkeypatch):
    """The interpreter's int32 overflow checks are built only to be dropped (no ``debug``): with
    them built or not, a kernel whose products wrap around gives the same values, and no error."""
    import dataclasses

    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    assert not builder.options.debug and not builder.options.sanitize_overflow
    outs = []
    for sanitize in (True, False):
        monkeypatch.setattr(builder, "options", dataclasses.replace(builder.options, sanitize_overflow=sanitize))
        out = torch.zeros(16, dtype=torch.int32)
        _int32_products_kernel[(1,)](out, 2**20, N=16)
        outs.append(out)
    wrapped = ((torch.arange(16, dtype=torch.int64) + 2**20) * 2**40 - 2**20) % 2**32
    assert torch.equal(outs[0], outs[1])
    assert torch.equal(outs[0].to(torch.int64) % 2**32, wrapped)
    # the checks are real: asserted (``debug``), they refuse this kernel
    monkeypatch.setattr(builder, "options", dataclasses.replace(builder.options, sanitize_overflow=True, debug=True))
    with pytest.raises(Exception, match="int32 overflow detected"):
        _int32_products_kernel[(1,)](torch.zeros(16, dtype=torch.int32), 2**20, N=16)
