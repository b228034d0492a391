"""Importing Triton for the kernels: interpreter mode on machines without CUDA, a clear error
when torch or triton is missing, and the launch options every kernel module shares.

Triton decides at decoration time (``@triton.jit``) whether a kernel runs compiled on the GPU
or in its numpy interpreter, reading ``TRITON_INTERPRET``. This module is the only place that
imports triton; it sets ``TRITON_INTERPRET=1`` first when CUDA is not available, so that importing any kernel
module on a CPU-only machine gives kernels that run there. (``runtime.load(device="cpu")`` and
``inkling-compat run --device cpu`` set it themselves before triton is imported.)

Interpreter pitfall (upstream triton-lang/triton #11584): under ``TRITON_INTERPRET=1`` a
``tl.dot`` on bfloat16 operands multiplies raw bit patterns. Every kernel therefore takes an
``UPCAST`` constexpr, set from :data:`INTERPRET`, that casts dot operands to float32 when
interpreting; on the GPU the operands stay bf16 (tensor cores).
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import os


from . import tiles
from .errors import RuntimeUnavailable


def _import() -> tuple:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised by a subprocess test
        raise RuntimeUnavailable(
            f"the reference runtime needs torch and triton (pip install 'inkling-compat[runtime]'): {exc}"
        ) from None
    if "triton" not in __import__("sys").modules and not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
    try:
        import triton
        import triton.language as tl
    except ImportError as exc:  # pragma: no cover - exercised by a subprocess test
        raise RuntimeUnavailable(
            f"the reference runtime needs triton (pip install 'inkling-compat[runtime]'): {exc}"
        ) from None
    return torch, triton, tl


torch, triton, tl = _import()

# Decided once, like triton's own decorators: the kernels below were built in this mode.
INTERPRET: bool = os.environ.get("TRITON_INTERPRET", "0") == "1"


def _fix_interpreter_index() -> None:
    """Triton 3.6's interpreter holds each scalar kernel argument as a 1-element array and turns
    it into a Python index with ``int(array)``, which NumPy >= 2.4 refuses ("only 0-dimensional
    arrays can be converted to Python scalars"): every ``range()`` over an argument (each
    kernel's K loop, the routing's chunk loop) then fails with an InterpreterError. Later
    Tritons squeeze the array first (3.9: ``int(self.handle.data.squeeze())``); do the same
    where the interpreter has the per-launch hook this wraps. Interpreter only."""
    try:
        from triton.runtime import interpreter
    except ImportError:  # pragma: no cover - no interpreter in this triton
        return
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None or getattr(original, "_squeezed_index", False):
        return

    def patch_lang_tensor(tensor, scope, *args, **kwargs):
        original(tensor, scope, *args, **kwargs)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

    patch_lang_tensor._squeezed_index = True
    interpreter._patch_lang_tensor = patch_lang_tensor


def _patch_language_once_per_launch() -> None:
    """Triton's interpreter patches ``triton.language`` (``inspect.getmembers`` over its modules)
    at each launch, and again at each call of a ``@triton.jit`` helper from inside the kernel,
    once per program instance, while the launch's patch is still in place: the same members get
    the same stand-ins (an already patched member is no builtin any more, the rest are set anew;
    a helper's patch is never undone), and that repeated patch is much of the time of a kernel
    that calls helpers (``tl.sum``, ``tl.cdiv``, ...). Here a helper's call during a launch
    patches only when it sees a language module not patched yet in this launch. Triton's with a
    restorable patch scope (3.7 on) only; interpreter only."""
    try:
        from triton.runtime import interpreter
    except ImportError:  # pragma: no cover - no interpreter in this triton
        return
    original = getattr(interpreter, "_patch_lang", None)
    scope_class = getattr(interpreter, "_LangPatchScope", None)
    if original is None or scope_class is None or getattr(original, "_once_per_launch", False):
        return
    launch: list[set[int]] = []  # the language modules the running launch patched (empty: none runs)

    def languages(fn) -> set[int]:
        return {id(value) for value in fn.__globals__.values() if value is tl or value is tl.core}

    def patch_lang(fn):
        if launch:  # a helper called from the running kernel
            seen = languages(fn)
            if seen <= launch[0]:
                return scope_class()
            launch[0] |= seen  # (triton's own helpers see triton.language.core: patched from here on)
            return original(fn)
        scope = original(fn)
        launch.append(languages(fn))
        restore = scope.restore

        def end_launch() -> None:
            launch.clear()
            restore()

        scope.restore = end_launch
        return scope

    patch_lang._once_per_launch = True
    interpreter._patch_lang = patch_lang


def _skip_unasserted_overflow_checks() -> None:
    """Triton's interpreter builds an integer-overflow check for every int32 ``+``, ``-`` and
    ``*`` (``sanitize_overflow``: a cast to int64, the operation again, two comparisons), then
    hands it to ``device_assert``, which drops it unless the builder's ``debug`` option is on (it
    is off: the interpreter's options are fixed at their defaults). The checks' result is never
    read, and building them is much of an interpreted kernel's time: off while ``debug`` is off,
    as compiled kernels drop them. Interpreter only."""
    try:
        from triton.runtime import interpreter
    except ImportError:  # pragma: no cover - no interpreter in this triton
        return
    builder = getattr(interpreter, "interpreter_builder", None)
    options = getattr(builder, "options", None)
    if options is None or getattr(options, "debug", True) or not getattr(options, "sanitize_overflow", False):
        return
    builder.options = dataclasses.replace(options, sanitize_overflow=False)


if INTERPRET:
    _fix_interpreter_index()
    _patch_language_once_per_launch()
    _skip_unasserted_overflow_checks()
# Opt-in autotuning over a few configs per kernel (GPU only; the benchmark turns it on).
AUTOTUNE: bool = os.environ.get("INKLING_AUTOTUNE", "0") == "1" and not INTERPRET


@triton.jit
def round_bf16_rne(x):
    """float32 -> float32 holding the nearest bfloat16 (ties to even). The interpreter's own
    float32 -> bfloat16 cast truncates, which doubles the rounding error; kernels apply this
    first when interpreting (``ROUND`` constexpr), after which the cast is exact."""
    bits = x.to(tl.uint32, bitcast=True)
    bits = bits + 0x7FFF + ((bits >> 16) & 1)
    bits = bits & 0xFFFF0000
    return bits.to(tl.float32, bitcast=True)


def dot_precision(dtype: "torch.dtype") -> str:
    """The DOT_PREC constexpr for operands of ``dtype``: float32 storage gets IEEE float32 dots
    (Triton's default for a float32 dot on the GPU is tf32, about 2.5e-3 relative error on this
    forward); bf16/fp16 operands ignore it."""
    return "ieee" if dtype == torch.float32 else "tf32"


def round_flag(dtype: "torch.dtype") -> bool:
    """The ROUND constexpr: fix the interpreter's truncating bf16 cast for an output of ``dtype``."""
    return INTERPRET and dtype == torch.bfloat16


def autotune(configs: list, key: list[str]):
    """``triton.autotune`` with short timing runs (5 ms warm-up, 25 ms of repeats per config),
    keyed on the kernels' T bucket (``TB``) and shapes. Tuning happens at the first call of a key
    (run one forward before a CUDA-graph capture: the capture then only looks the config up);
    the chosen configs are also cached on disk (``cache_results``) so a later process skips it."""

    def bench(fn, quantiles=None):
        return triton.testing.do_bench(fn, warmup=5, rep=25, quantiles=quantiles)

    prune = {"early_config_prune": _prune_by_t_bucket}
    for kwargs in ({"do_bench": bench, "cache_results": True}, {"do_bench": bench}, {}):
        try:  # older Tritons lack cache_results, then do_bench
            return triton.autotune(configs=configs, key=key, prune_configs_by=prune, **kwargs)
        except TypeError:
            continue
    raise RuntimeError("triton.autotune refused every argument set")  # pragma: no cover


def _prune_by_t_bucket(configs: list, named_args: dict, **kwargs) -> list:
    """Only tiles that fit the T bucket: BLOCK_M <= max(16, TB) and >= min(64, TB // 16), so
    a T = 1 key times only 16-row tiles and a T = 4096 key no 16-row ones (halves tuning time)."""
    tb = named_args.get("TB")
    if not isinstance(tb, int):
        return configs
    keep = [c for c in configs if min(64, tb // 16) <= c.kwargs.get("BLOCK_M", 16) <= max(16, tb)]
    return keep or configs


def check_device(*tensors: "torch.Tensor") -> None:
    """Compiled kernels need CUDA tensors; interpreted kernels take any device."""
    if INTERPRET:
        return
    for t in tensors:
        if t is not None and not t.is_cuda:
            raise RuntimeUnavailable(
                "triton was imported in compiled (GPU) mode but got CPU tensors; "
                "set TRITON_INTERPRET=1 before importing triton to run the kernels on the CPU"
            )


def tiled_launch_config(flags: dict, caps: "tiles.DeviceCaps", kernel: str, *, T: int, N: int, K: int = 0,
                        groups: int = 1, extra: int = 0, dtype_bytes: int = 2, tuned: bool = False) -> tuple:
    """(grid, constexprs and launch options) of a GEMM kernel's launch, its grid one program per
    (M tile, group, N tile) over ``cdiv(T, BLOCK_M) + extra`` M tiles (``extra``: the group-aligned
    tiles of the fused path), ``groups`` (experts) and ``cdiv(N, BLOCK_N)`` N tiles. ``flags``: the
    launch's other constexprs. The tile is the policy's choice for ``kernel``; ``tuned``
    (autotuning): the grid is a function of the tuned config and the options are left to the tuner."""

    def grid(block_m: int, block_n: int) -> tuple:
        return ((tiles.cdiv(T, block_m) + extra) * groups * tiles.cdiv(N, block_n),)

    if tuned:
        return (lambda meta: grid(meta["BLOCK_M"], meta["BLOCK_N"])), flags
    cfg = tiles.choose(kernel, caps, T=T, K=K, N=N, dtype_bytes=dtype_bytes).launch()
    return grid(cfg["BLOCK_M"], cfg["BLOCK_N"]), {**flags, **cfg}


def launch(cached: "CachedLaunch", tuned, grid, args: tuple, meta: dict, *, tunable: bool = True) -> None:
    """Run one launch: through the autotuner (``tuned``, None unless autotuning) when the launch is
    ``tunable``, else through the cached launch with the policy's tile already in ``meta``."""
    if tuned is not None and tunable:
        tuned[grid](*args, **meta)
    else:
        cached(grid, args, meta)


# Per-shape launch choices (grid, constexprs, tile) kept by each wrapper: an eager forward asks
# for the same few shapes every layer, and building them costs more host time than the lookup.
LAUNCH_CACHE_SIZE = 1024
_LAUNCH_CACHES: list = []


def launch_cache(fn):
    """``fn`` (pure in its hashable arguments: shapes, dtypes, device, flags) memoized, at most
    :data:`LAUNCH_CACHE_SIZE` entries (least recently used dropped). A cached result is shared:
    callers never change it."""
    cached = functools.lru_cache(maxsize=LAUNCH_CACHE_SIZE)(fn)
    _LAUNCH_CACHES.append(cached)
    return cached


def clear_launch_caches() -> None:
    """Forget every wrapper's cached launch choices (a test that plants another tile policy)."""
    for cached in _LAUNCH_CACHES:
        cached.cache_clear()


# Launch a compiled kernel without triton's per-call binding when nothing it specializes on changed.
FAST_LAUNCH: bool = os.environ.get("INKLING_FAST_LAUNCH", "1") != "0" and not INTERPRET


def _params(fn) -> list[tuple[str, bool, bool]]:
    if hasattr(fn, "params"):  # a JITFunction
        return [(p.name, bool(p.is_constexpr), bool(p.do_not_specialize)) for p in fn.params]
    import inspect  # the interpreter's InterpretedFunction: read the Python function

    dns = set((getattr(fn, "kwargs", None) or {}).get("do_not_specialize") or ())
    return [(name, "constexpr" in str(p.annotation), name in dns) for name, p in inspect.signature(fn.fn).parameters.items()]


class CachedLaunch:
    """``fn[grid](*args, **meta)`` for a kernel whose constexprs are all passed in ``meta``, with
    triton's per-call work (argument binding, specialization, cache-key hashing: most of the
    ~50-90 us an eager launch costs on the H200 machine, benchmarks/ops/host_cost.py) done once
    per key. The key holds everything triton specializes on: every argument that is not
    ``do_not_specialize`` by value (shapes, strides, flags), every tensor by dtype and 16-byte
    alignment, and the launch options; a hit calls the compiled kernel directly (its own
    ``kernel[grid](*args)`` launcher, with the constexpr values appended in declaration order).
    The interpreter, and ``INKLING_FAST_LAUNCH=0``, always take ``fn[grid]``."""

    def __init__(self, fn):
        self.fn = fn
        params = _params(fn)  # (name, constexpr?, do_not_specialize?) in declaration order
        self.constexprs = tuple(name for name, const, _ in params if const)
        self.n_args = sum(1 for _, const, _ in params if not const)
        self.skip = frozenset(i for i, (_, const, dns) in enumerate(params) if not const and dns)
        # The kernels name their pointer parameters *_ptr: those take tensors, the others ints.
        self.ptrs = tuple(i for i, (name, const, _) in enumerate(params) if not const and name.endswith("_ptr"))
        values = [i for i, (_, const, _) in enumerate(params) if not const and i not in self.skip and i not in self.ptrs]
        self.values = operator.itemgetter(*values) if len(values) > 1 else (lambda a, i=values[0]: (a[i],)) if values else (lambda a: ())
        self.kernels: dict = {}

    def key(self, args: tuple, meta: dict) -> tuple:
        try:
            tensors = tuple([(a.dtype, a.data_ptr() & 15 == 0) for a in map(args.__getitem__, self.ptrs)])
            scalars = self.values(args)
        except AttributeError:  # a pointer parameter given something else: key every argument generically
            tensors, scalars = (), tuple((a.dtype, a.data_ptr() & 15 == 0) if isinstance(a, torch.Tensor) else a
                                         for i, a in enumerate(args) if i not in self.skip)
        if not _PLAIN.issuperset(map(type, scalars)):  # a tensor (or anything else) among the scalars
            scalars = tuple((v.dtype, v.data_ptr() & 15 == 0) if isinstance(v, torch.Tensor) else v for v in scalars)
        # compiled kernels belong to one device's context
        return (scalars, tensors, tuple(meta.items()), torch.cuda.current_device())

    def __call__(self, grid: tuple, args: tuple, meta: dict) -> None:
        if not FAST_LAUNCH or len(args) != self.n_args:
            self.fn[grid](*args, **meta)
            return
        key = self.key(args, meta)
        hit = self.kernels.get(key)
        if hit is not None:  # the key holds meta's items, so the constexpr values kept with the kernel are meta's
            kernel, constexprs = hit
            kernel[(grid + (1, 1))[:3]](*args, *constexprs)
            return
        kernel = self.fn[grid](*args, **meta)
        if kernel is not None and all(name in meta for name in self.constexprs) and hasattr(kernel, "__getitem__"):
            self.kernels[key] = (kernel, tuple([meta[name] for name in self.constexprs]))


# Argument types keyed by value as they are (anything else is checked for tensors first).
_PLAIN = frozenset((int, bool, float, str, type(None)))
