"""An oracle made of sglang's own shared-sink LoRA code, for differential tests.

sglang 0.5.23's `sglang/srt/models/inkling_common/lora.py` is read out of the sglang wheel
at test time (never copied into this repository) and executed as a module. What it imports
from the rest of sglang is replaced, only while it is executed, by the smallest stand-ins
that let the classes be defined:

* `BaseLoRABackend` (a type annotation only), `DenseLoraKind` (three enum names),
  `capturing_lora_graph` and `symm_mem_all_reduce` (only called in forward, never here);
* `InklingBatchDenseMLP`, the base class: an `nn.Module` with the one class attribute the
  LoRA classes read from it (`_w13_gate_up_contiguous = False`, as in dense_mlp.py).

Layers are created without the base `__init__` (which builds weights and needs a TP group):
`object.__new__` plus `nn.Module.__init__`, then only the attributes the LoRA methods read
(`n_shared_experts`, `moe_tp_size`, `intermediate_size_per_partition`,
`_linearized_bf16_enabled`, `_w13_gate_up_contiguous`). Pool buffers are tensors on torch's
`meta` device: shapes and dtypes without storage, so every view/copy/index runs its shape
checks exactly as on a GPU, at no memory cost.

Finding the wheel (`find_wheel`): `$INKLING_COMPAT_SGLANG_WHEEL`, else a
`sglang-0.5.23-*.whl` in the cache directory (`$INKLING_COMPAT_CACHE`, default
`~/.cache/inkling-compat/`), else `python -m pip download --no-deps sglang==0.5.23 -d <cache>`.
"""

from __future__ import annotations

import enum
import glob
import hashlib
import os
import re
import subprocess
import sys
import traceback
import types
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from oracle import wheel_source

SGLANG_VERSION = "0.5.23"
LORA_PATH = "sglang/srt/models/inkling_common/lora.py"
MODULE_NAME = "sglang.srt.models.inkling_common.lora"
# sha256 of the 0.5.23 wheel's lora.py (the file the seeds and the rules were written from);
# another file is still tested, and the summary table says so.
EXPECTED_LORA_SHA256 = "dd3875e3ab8c797196a76ed66a900cb78b215482dc0e76da5ae11c83157c3b84"


class WheelUnavailable(RuntimeError):
    """The sglang wheel could not be found or downloaded (the reason is the message)."""


def cache_dir() -> Path:
    return Path(os.environ.get("INKLING_COMPAT_CACHE") or Path.home() / ".cache" / "inkling-compat")


def find_wheel(download: bool = True, timeout: float = 600.0, version: str = SGLANG_VERSION) -> Path:
    """The wheel of an sglang release (0.5.23 unless said): env var (0.5.23 only), cache, or a
    pip download into the cache."""
    given = os.environ.get("INKLING_COMPAT_SGLANG_WHEEL") if version == SGLANG_VERSION else None
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            raise WheelUnavailable(f"INKLING_COMPAT_SGLANG_WHEEL={given} is not a file")
        return path
    cache = cache_dir()
    pattern = f"sglang-{version}-*.whl"
    found = sorted(glob.glob(str(cache / pattern)))
    if found:
        return Path(found[0])
    if not download:
        raise WheelUnavailable(f"no {pattern} in {cache} and downloading is off")
    cache.mkdir(parents=True, exist_ok=True)
    base = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
            f"sglang=={version}", "-d", str(cache)]
    # The wheel for this interpreter; else the cp311 one (only lora.py is read, any wheel does).
    fallback = ["--python-version", "3.11", "--platform", "manylinux_2_34_x86_64", "--only-binary=:all:"]
    failure = ""
    for command in (base, base + fallback):
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            failure = f"`{' '.join(command)}` failed: {exc}"
            continue
        found = sorted(glob.glob(str(cache / pattern)))
        if found:
            return Path(found[0])
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        failure = f"`{' '.join(command)}` exited {done.returncode}: {tail[0]}"
    raise WheelUnavailable(failure)


def read_lora_source(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(LORA_PATH).decode("utf-8")


# --- stand-ins for what lora.py imports ----------------------------------------------------


def _stub_leaves() -> dict[str, dict[str, Any]]:
    """What lora.py imports from the rest of sglang: module name -> the attributes it reads."""
    import torch

    class BaseLoRABackend:  # only used as an annotation
        pass

    class DenseLoraKind(enum.Enum):
        LINEAR = "linear"
        SINK_GATE_UP = "sink_gate_up"
        SINK_DOWN = "sink_down"

    class InklingBatchDenseMLP(torch.nn.Module):
        """Stand-in base: dense_mlp.InklingBatchDenseMLP's class-level default only."""

        _w13_gate_up_contiguous = False

        def _forward_bf16_linearized(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover
            raise NotImplementedError("the oracle never runs a forward")

    def capturing_lora_graph() -> bool:  # pragma: no cover - forward only
        return False

    def symm_mem_all_reduce(tensor: Any, group: Any) -> Any:  # pragma: no cover - forward only
        raise NotImplementedError("the oracle never runs a forward")

    leaves = {
        "sglang.srt.lora.backend.base_backend": {"BaseLoRABackend": BaseLoRABackend},
        "sglang.srt.lora.dense.plan": {"DenseLoraKind": DenseLoraKind},
        "sglang.srt.lora.utils": {"capturing_lora_graph": capturing_lora_graph},
        "sglang.srt.models.inkling_common.dense_mlp": {"InklingBatchDenseMLP": InklingBatchDenseMLP},
        "sglang.srt.models.inkling_common.kernels.comm": {"symm_mem_all_reduce": symm_mem_all_reduce},
    }
    return leaves


def load_lora_module(source: str, origin: str) -> types.ModuleType:
    """Execute lora.py's source as a module, with the stand-ins in sys.modules meanwhile."""
    return wheel_source.exec_module(source, origin, MODULE_NAME, _stub_leaves())


# --- outcomes -----------------------------------------------------------------------------

# Errors that Python itself raises with a fixed text at a line of lora.py that reads a shape
# (tuple unpacking, tuple indexing): the checker reproduces those texts exactly.
_PYTHON_SHAPE_ERRORS = re.compile(r"^(not enough values to unpack|too many values to unpack|tuple index out of range)")


@dataclass(frozen=True)
class Outcome:
    """What one call sequence did: accepted, or the exception (class, text) and where."""

    ok: bool
    error_class: str | None = None
    message: str | None = None
    step: str | None = None  # which call raised: initialize_lora, set_lora_info, rebind, slots, slice
    kind: str | None = None  # "sglang" (a raise statement of lora.py), "python" (shape unpack/index), "torch"
    line: int | None = None  # line of lora.py that raised
    shape: tuple[int, ...] | None = None  # slice methods: the per-rank shape

    @property
    def exact(self) -> bool:
        """True when the checker must reproduce the text exactly (sglang's or Python's)."""
        return self.kind in ("sglang", "python")


def _classify(exc: BaseException, origin: str, step: str) -> Outcome:
    """sglang: raised by a `raise` statement of lora.py (the innermost Python frame is lora.py
    and its line is the statement's first line, `raise ...`); python: Python's own unpacking /
    indexing error at a lora.py line that reads a shape; torch: anything else (torch, `range`)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    innermost = tb.tb_frame.f_code.co_filename if tb is not None else None
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == origin]
    line = frames[-1].lineno if frames else None
    statement = (frames[-1].line or "").strip() if frames else ""
    text = str(exc)
    if innermost == origin and statement.startswith("raise"):
        kind = "sglang"
    elif isinstance(exc, (ValueError, IndexError)) and _PYTHON_SHAPE_ERRORS.match(text):
        kind = "python"
    else:
        kind = "torch"
    return Outcome(False, type(exc).__name__, text, step, kind, line)


@dataclass
class FakeBackend:
    """What initialize_lora reads from a LoRA backend: name, max_loras_per_batch, runner."""

    name: str | None
    max_loras_per_batch: int
    runner: Any = None
    is_moe_lora: bool = False


_MISSING = object()


@dataclass
class SglangSink:
    """sglang's two shared-sink LoRA classes, loaded from the wheel."""

    module: types.ModuleType
    wheel: Path
    origin: str
    lora_sha256: str
    meta_cache: dict[tuple[int, ...], Any] = field(default_factory=dict)

    @property
    def legacy(self) -> type:
        return self.module.InklingBatchDenseMLPWithLoRA

    @property
    def v2(self) -> type:
        return self.module.InklingBatchDenseMLPWithLoRAV2

    def cls(self, sink_class: str) -> type:
        # (the V2 class is read only when asked for: releases before 0.5.23 have none)
        return {"legacy": lambda: self.legacy, "v2": lambda: self.v2}[sink_class]()

    # -- layers ----------------------------------------------------------------------------

    def layer(
        self,
        sink_class: str,
        *,
        n: int = 2,
        tp_size: int = 1,
        f_local: int = 1,
        linearized: bool = True,
        contiguous: bool | object = _MISSING,
    ) -> Any:
        """A LoRA sink without the base __init__: only the attributes its methods read.

        `contiguous` left out keeps the class default (dense_mlp sets it in __init__ only
        when it holds: linearized, LoRA on and the triton_v2 backend).
        """
        import torch

        cls = self.cls(sink_class)
        layer = object.__new__(cls)
        torch.nn.Module.__init__(layer)
        layer.n_shared_experts = n
        layer.moe_tp_size = tp_size
        layer.moe_tp_rank = 0
        layer.intermediate_size_per_partition = f_local
        layer._linearized_bf16_enabled = linearized
        if contiguous is not _MISSING:
            layer._w13_gate_up_contiguous = contiguous
        return layer

    def tensor(self, shape: Sequence[int]) -> Any:
        import torch

        return torch.empty(tuple(shape), device="meta", dtype=torch.bfloat16)

    def _run(self, step: str, call: Any) -> Outcome | None:
        try:
            call()
        except Exception as exc:  # noqa: BLE001 - every exception is an outcome
            return _classify(exc, self.origin, step)
        return None

    # -- initialize_lora -------------------------------------------------------------------

    def initialize_lora(
        self,
        sink_class: str,
        *,
        backend_name: str | None,
        max_loras_per_batch: int,
        has_runner: bool,
        linearized: bool,
        contiguous: bool,
        n: int = 2,
    ) -> Outcome:
        layer = self.layer(sink_class, n=n, linearized=linearized, contiguous=contiguous)
        backend = FakeBackend(backend_name, max_loras_per_batch, object() if has_runner else None)
        failed = self._run("initialize_lora", lambda: layer.initialize_lora(backend))
        return failed or Outcome(True)

    # -- set_lora_info, re-binding, slot updates --------------------------------------------

    def bind(
        self,
        sink_class: str,
        *,
        n: int,
        pool: Sequence[Sequence[int]],
        rebind: Sequence[Sequence[int]] | None = None,
        updated_slots: Iterable[int] | None = None,
        tp_size: int = 1,
        f_local: int = 1,
        backend: FakeBackend | None = None,
    ) -> Outcome:
        """initialize_lora (a backend that passes), set_lora_info(pool), then optionally
        set_lora_info(rebind) and on_lora_slots_updated(set(updated_slots)): the first
        exception, or ok."""
        layer = self.layer(sink_class, n=n, tp_size=tp_size, f_local=f_local, linearized=True, contiguous=True)
        if backend is None:
            backend = FakeBackend("triton_v2" if sink_class == "v2" else "triton", 1, object())
        failed = self._run("initialize_lora", lambda: layer.initialize_lora(backend))
        if failed:
            return failed
        tensors = [self.tensor(s) for s in pool]
        failed = self._run("set_lora_info", lambda: layer.set_lora_info(*tensors))
        if failed:
            return failed
        if rebind is not None:
            again = [self.tensor(s) for s in rebind]
            failed = self._run("rebind", lambda: layer.set_lora_info(*again))
            if failed:
                return failed
        if updated_slots is not None:
            ids = set(updated_slots)
            failed = self._run("slots", lambda: layer.on_lora_slots_updated(ids))
            if failed:
                return failed
        return Outcome(True)

    # -- slice methods ---------------------------------------------------------------------

    def slice(
        self,
        factor: str,
        shape: Sequence[int],
        target: str,
        *,
        n: int,
        tp_size: int,
        tp_rank: int,
        f_local: int,
        sink_class: str = "legacy",
    ) -> Outcome:
        """slice_moe_lora_{factor}_weights(tensor of `shape`, tp_rank, target)."""
        layer = self.layer(sink_class, n=n, tp_size=tp_size, f_local=f_local)
        method = layer.slice_moe_lora_a_weights if factor == "a" else layer.slice_moe_lora_b_weights
        weights = self.tensor(shape)
        result: list[Any] = []
        failed = self._run("slice", lambda: result.append(method(weights, tp_rank, target)))
        if failed:
            return failed
        return Outcome(True, shape=tuple(result[0].shape))


def load(wheel: Path | None = None) -> SglangSink:
    """Load the oracle from `wheel` (default: `find_wheel()`)."""
    wheel = wheel or find_wheel()
    source = read_lora_source(wheel)
    origin = f"{wheel}!/{LORA_PATH}"
    module = load_lora_module(source, origin)
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
    return SglangSink(module=module, wheel=wheel, origin=origin, lora_sha256=digest)
