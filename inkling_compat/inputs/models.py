"""Typed inputs of a check: server config, model config, platform and adapter manifests, as the
plain frozen records a check reads, and the plain reader that builds them.

Field names are sglang's own (server arguments, `config.json` keys) and defaults are sglang
0.5.23's, so a user can paste what they launch with. The records are built without pydantic:
`read(cls, data)` takes a mapping whose every value is already of its field's type (what the
launch parser, JSON files and the adapter reader give nearly always) and returns None for
anything else, which `inputs/loading.py` then validates with the pydantic models of
`inputs/input_schema.py` (the same fields, the source of schemas/*.schema.json) for their
conversions and error messages. tests/test_input_records.py holds the two to agreement.
"""

from __future__ import annotations

import sys

from inkling_compat.inputs.record import Record, dump, field
from inkling_compat.sglang.plain_dataclass import dataclass
from inkling_compat.inputs.versions import SGLANG_DEFAULT_VERSION, SGLANG_VERSIONS  # noqa: F401 - re-exported
from inkling_compat.inputs.field_bounds import (  # noqa: F401 - used by the records and re-exported
    _int_text,
    _Bounded,
    _bounded,
    _StrictBool,
    STRICT,
    _LAYERS,
    _WIDTH,
    _HEADS,
    _VOCAB,
    _EXPERTS,
    _SMALL_COUNT,
    _PARALLEL,
    _INT64_WHY,
    _INT64,
    _SLOTS,
    _DIM,
    _RANK,
    _ARGPARSE_INTS,
    _ARGPARSE_FLOATS,
)

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Annotated, Any, Literal


class _Input(Record):
    """An input record: a frozen record that also keeps which fields its data stated
    (`model_fields_set`, as pydantic's) and, for a class whose extra keys are kept
    (`_extra = "allow"`), those keys (`model_extra`). `_extra` is the class's policy for keys
    that are not fields: "forbid" (our own formats: the loader reports them, with a
    suggestion), "ignore" (config.json: HF's other keys) or "allow"."""

    __slots__ = ("model_fields_set", "model_extra")
    _extra = "forbid"
    # The fields are kept in the instance's __dict__, not in slots: a record is built by two
    # dict updates (its defaults, then the values), a check builds a few dozen per input.
    _fields_in_dict = True

    def __init__(self, **values: Any):
        """A record of `values`, validated as the pydantic model of the same name validates them
        (a caller's typed input is checked as a file is): read as they are where every value
        has its field's type (`read`), else by pydantic, whose ValidationError is raised."""
        cls = type(self)
        record = _record(cls, values)
        if record is _NO:
            from inkling_compat.inputs import input_schema

            record = from_validated(input_schema.pydantic_models(sys.modules[__name__])[cls.__name__].model_validate(_as_data(values)))
        self.__dict__.update(record.__dict__)
        object.__setattr__(self, "model_fields_set", record.model_fields_set)
        object.__setattr__(self, "model_extra", record.model_extra)

    @classmethod
    def model_construct(cls, **values: Any) -> Any:
        """A record of these values, not validated (pydantic's name for it): for values the
        package built itself (the adapter reader's, a validated model's)."""
        self = object.__new__(cls)
        fields = cls.__fact_fields__
        stated = frozenset(values)
        extra: dict[str, Any] | None = {} if cls._extra == "allow" else None
        unknown = [k for k in values if k not in fields]
        if unknown:
            if extra is None:
                raise TypeError(f"{cls.__name__}: unknown fields {sorted(unknown)}")
            extra = {k: values.pop(k) for k in unknown}
        defaults, factories, required = cls.__dict__.get("_construction") or _construction(cls)
        own = self.__dict__
        own.update(defaults)
        for name, factory in factories:
            if name not in values:
                own[name] = factory()
        for name in required:
            if name not in values:
                raise TypeError(f"{cls.__name__}: missing field {name!r}")
        own.update(values)
        object.__setattr__(self, "model_fields_set", stated)  # (extra keys too, as pydantic's)
        object.__setattr__(self, "model_extra", extra)
        return self

    def __getattr__(self, name: str) -> Any:
        """An extra key kept (`_extra = "allow"`) as an attribute, as pydantic gives it."""
        if name not in ("model_extra", "model_fields_set"):
            extra = self.model_extra
            if extra and name in extra:
                return extra[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def model_dump(self, *, mode: str = "python", include: Any = None, exclude: Any = None, exclude_none: bool = False) -> dict[str, Any]:
        out = super().model_dump(mode=mode, include=include, exclude=exclude, exclude_none=exclude_none)
        for name, value in (self.model_extra or {}).items():  # after the fields, as pydantic writes them
            if (include is None or name in include) and (exclude is None or name not in exclude) and not (exclude_none and value is None):
                out[name] = dump(value, mode == "json")
        return out

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values() and self.model_extra == other.model_extra  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __reduce__(self) -> Any:
        return (_rebuild_input, (type(self), dict(self), self.model_fields_set, self.model_extra))

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Any:
        new = super().model_copy(update=update)
        object.__setattr__(new, "model_fields_set", self.model_fields_set | frozenset(update or ()))
        object.__setattr__(new, "model_extra", self.model_extra)
        return new


def _construction(cls: type) -> tuple[dict[str, Any], tuple[tuple[str, Any], ...], tuple[str, ...]]:
    """A record class's defaults, default factories and required fields (once per class)."""
    from inkling_compat.inputs.record import _MISSING

    fields = cls.__fact_fields__  # type: ignore[attr-defined]
    made = (
        {n: f.default for n, f in fields.items() if f.default is not _MISSING},
        tuple((n, f.default_factory) for n, f in fields.items() if f.default is _MISSING and f.default_factory is not None),
        tuple(n for n, f in fields.items() if f.is_required()),
    )
    type.__setattr__(cls, "_construction", made)
    return made


def _rebuild_input(cls: type, values: dict[str, Any], stated: frozenset[str], extra: dict[str, Any] | None) -> Any:
    record = cls.model_construct(**values, **(extra or {}))  # type: ignore[attr-defined]
    object.__setattr__(record, "model_fields_set", frozenset(stated))
    return record


class _Strict(_Input):
    """Our own file formats: unknown keys are reported (with a suggestion) by the loader."""


class EnvSwitches(_Strict):
    """Environment variables that change sglang's behaviour for Inkling serving."""

    SGLANG_OPT_LINEARIZED_SHARED_SINK: bool = False
    SGLANG_ENABLE_UNIFIED_RADIX_TREE: bool = True
    SGLANG_OPT_USE_INKLING_SHARED_FUSED_MOE: bool | None = None
    SGLANG_OPT_USE_INKLING_FUSED_ATTN_PROLOGUE: bool = False
    SGLANG_OPT_USE_INKLING_SHEARED_BIAS: bool = False
    SGLANG_OPT_USE_INKLING_MULTI_STREAM_OVERLAP: bool = False
    SGLANG_EXPERIMENTAL_LORA_OPTI: bool = False
    SGLANG_ENABLE_OVERLAP_PLAN_STREAM: bool = False
    SGLANG_RAGGED_VERIFY_MODE: str = "static"
    # sglang 0.5.16-0.5.17 only: the deprecated --moe-runner-backend cutlass (arg_groups/overrides.py)
    SGLANG_CUTLASS_MOE: bool = False


class StatedSink(_Strict):
    """Module-level facts a user may state instead of letting the checker derive them.

    Used to check situations no whole config reaches today (e.g. a sink built without
    linearized BF16 weights under LoRA). A given fact overrides the derived one and the
    report says so.
    """

    sink_class: Literal["legacy", "v2"] | None = None
    linearized_bf16_enabled: bool | None = None
    w13_gate_up_contiguous: bool | None = None
    backend_name: str | None = None
    backend_has_dense_engine: bool | None = None
    max_loras_per_batch: int | None = None


class DraftFacts(_Strict):
    """Stated: what the speculative draft checkpoint's config.json says, which the checker does
    not read (--speculative-draft-model-path is another model)."""

    # The DFLASH draft's dflash_config.target_layer_ids (speculative/dflash_utils.py
    # parse_dflash_draft_config l.590-680); None: not stated (sglang then derives them).
    dflash_target_layer_ids: list[int] | None = None


class ServerConfig(_Strict):
    """sglang server arguments (Python names of the CLI flags) plus environment switches."""

    # LoRA (arg_groups/fields/lora.py)
    enable_lora: bool | None = None
    enable_lora_overlap_loading: bool | None = None
    max_lora_rank: Annotated[int | None, _RANK] = None
    lora_target_modules: list[str] | None = None
    # Kept untyped on purpose: sglang's own type checks on it are rules.
    lora_paths: Any = None
    max_loaded_loras: Annotated[int | None, _INT64] = None
    max_loras_per_batch: Annotated[int, _SLOTS] = 8
    lora_eviction_policy: str = "lru"
    lora_backend: str = "csgmv"
    max_lora_chunk_size: Annotated[int | None, _INT64] = 16
    experts_shared_outer_loras: bool | None = None
    lora_use_virtual_experts: bool = False
    lora_strict_loading: bool = False
    lora_drain_wait_threshold: float = 0.0
    # Model / parallelism
    dtype: str = "auto"
    quantization: str | None = None
    kv_cache_dtype: str = "auto"
    tp_size: Annotated[int, _PARALLEL] = 1
    ep_size: Annotated[int, _PARALLEL] = 1
    dp_size: Annotated[int, _PARALLEL] = 1
    # --attn-dp-size (fields/parallel.py); `--dp-size N --enable-dp-attention` resolves to it.
    attn_dp_size: Annotated[int, _PARALLEL] = 1
    enable_dp_attention: bool = False
    moe_dense_tp_size: Annotated[int | None, _INT64] = None
    page_size: Annotated[int | None, _INT64] = None
    load_format: str = "auto"
    # Kernels and backends
    moe_runner_backend: str = "auto"
    speculative_moe_runner_backend: str | None = None
    fp4_gemm_backend: str = "auto"
    attention_backend: str | None = None
    prefill_attention_backend: str | None = None
    decode_attention_backend: str | None = None
    moe_a2a_backend: str = "none"
    # Speculative decoding
    speculative_algorithm: str | None = None
    speculative_adaptive: bool = False
    enable_multi_layer_eagle: bool = False
    # Cache / memory / scheduling
    disable_radix_cache: bool = False
    disable_hybrid_swa_memory: bool = False
    mamba_radix_cache_strategy: str = "auto"
    disaggregation_mode: str = "null"
    enable_scattered_sconv: bool = False
    enable_deterministic_inference: bool = False
    enable_pdmux: bool = False
    enable_two_batch_overlap: bool = False
    enable_eplb: bool = False
    init_expert_location: str = "trivial"
    ep_num_redundant_experts: Annotated[int, _INT64] = 0
    ep_join_mode: str | None = None
    # --- Read for the raise-site audit's rules (sglang 0.5.23 defaults, arg_groups/fields/*.py) ---
    # fields/serving.py; None: sglang uses --model-path (serving_hook.py l.642-646).
    served_model_name: str | None = None
    # fields/parallel.py (--attention-context-parallel-size)
    attn_cp_size: Annotated[int, _PARALLEL] = 1
    # fields/exec_.py
    elastic_ep_backend: str | None = None
    enable_elastic_expert_backup: bool = False
    # fields/mm.py; None: sglang decides per model (Inkling is in mm_disabled_models: off).
    enable_multimodal: bool | None = None
    # fields/exec_.py: aux hidden-state capture without a draft (validation_hook.py l.697-753).
    enable_return_aux_hidden_states: bool = False
    return_aux_hidden_state_layer_ids: list[int] | None = None
    # --- end of the audit's block ---
    # Every other sglang 0.5.23 argument given, under its dest, as sglang's argparse converted
    # it (inputs/argument_table.py): kept so nothing sglang reads is dropped.
    arguments: dict[str, Any] = field(default_factory=dict)
    # Environment switches and stated module facts
    env: EnvSwitches = field(default_factory=EnvSwitches)
    sink: StatedSink | None = None
    draft: DraftFacts | None = None



class QuantizationConfig(_Input):
    """The checkpoint's quantization block, as found in config.json or hf_quant_config.json."""

    _extra = "allow"

    quant_method: str | None = None
    quant_algo: str | None = None
    group_size: Annotated[int | None, _bounded(None, None)] = None
    exclude_modules: list[str] | None = None
    quantization: dict[str, Any] | None = None
    modelopt_quant_config: dict[str, Any] | None = None
    activation_scheme: str | None = None


class QuantMethodWiring(_Strict):
    """Stated: which quant-method class a layer class is wired to.

    sglang 0.5.23's InklingModelOptNvfp4Config wires routed FusedMoE layers (and the FP4
    shared sink, built as InklingSharedFusedMoE) to ModelOptNvFp4FusedMoEMethod; only an
    InklingBatchDenseMLP with an FP4 strategy would get InklingNvfp4MoEMethod. Stating
    another wiring checks a patched build (or a custom loader) against those guards.
    """

    routed_experts: str | None = None
    shared_sink: str | None = None
    # "own": the sink's forward runs its own FP4/BF16 path (sglang 0.5.23);
    # "fused_moe_apply": generic FusedMoE code calls quant_method.apply() on it.
    shared_sink_forward: Literal["own", "fused_moe_apply"] | None = None


class StatedAttnPrologue(_Strict):
    """Stated: the fused attention prologue's MXFP8 store inputs, per TP rank.

    Normally derived (FA4 + use_sconv + head_dim 128 + SGLANG_OPT_USE_INKLING_FUSED_ATTN_PROLOGUE,
    MXFP8 store with --kv-cache-dtype mxfp8 and page size 128); a stated value overrides.
    """

    mxfp8_store: bool | None = None
    q_width: int | None = None
    kv_width: int | None = None
    kv_scale_buffers: bool | None = None


class AudioConfig(_Input):
    """config.json `audio_config` (configs/inkling.py InklingAudioConfig; sglang's defaults)."""

    _extra = "ignore"

    # The audio tower is built only when it has a width (models/inkling.py l.1004-1008).
    decoder_dmodel: Annotated[int | None, _bounded(None, None)] = None
    # Kept as written: InklingAudio asserts `audio_mode == "dmel"` on whatever the file holds.
    audio_mode: Any = "dmel"


class VisionConfig(_Input):
    """config.json `vision_config` (configs/inkling.py InklingVisionConfig; sglang's defaults)."""

    _extra = "ignore"

    decoder_dmodel: Annotated[int | None, _bounded(None, None)] = None
    vision_encoder_type: Any = "hmlp"
    # Bounded: hmlp.py factors them by trial division; real patches are 14-32 pixels, 1-2 frames.
    patch_size: Annotated[int, _bounded(-(1 << 20), 1 << 20, "a patch size", "real patches are at most a few dozen pixels")] = 16
    temporal_patch_size: Annotated[int, _bounded(-(1 << 20), 1 << 20, "a patch size", "real temporal patches are a few frames")] = 1


class MtpConfig(_Input):
    """config.json `mtp_config` (the MTP draft head's block, read by InklingMMConfig)."""

    _extra = "ignore"

    local_layer_ids: list[Any] | None = None


class ModelConfig(_Input):
    """The Inkling `config.json` fields the rules read; other keys are HF's and ignored."""

    _extra = "ignore"

    architectures: list[str] = field(default_factory=lambda: ["InklingForConditionalGeneration"])
    model_type: str = "inkling"
    vocab_size: Annotated[int, _VOCAB] = 201024
    hidden_size: Annotated[int, _WIDTH] = 1536
    intermediate_size: Annotated[int, _WIDTH] = 768
    dense_intermediate_size: Annotated[int | None, _WIDTH] = None
    num_hidden_layers: Annotated[int, _LAYERS] = 16
    num_attention_heads: Annotated[int, _HEADS] = 12
    num_key_value_heads: Annotated[int, _HEADS] = 4
    head_dim: Annotated[int | None, _WIDTH] = None
    swa_num_attention_heads: Annotated[int | None, _HEADS] = None
    swa_num_key_value_heads: Annotated[int | None, _HEADS] = None
    swa_head_dim: Annotated[int | None, _WIDTH] = None
    # The layers with sliding-window (SWA) attention, whose heads are the swa_* ones (configs/inkling.py l.91-92).
    local_layer_ids: list[Any] | None = None
    n_routed_experts: Annotated[int, _EXPERTS] = 0
    n_shared_experts: Annotated[int, _EXPERTS] = 0
    num_experts_per_tok: Annotated[int, _EXPERTS] = 1
    # config.json booleans as they are: sglang tests their truthiness (a string "false" is true).
    shared_expert_sink: Annotated[bool, STRICT] = False
    shared_experts_size: Annotated[int, _SMALL_COUNT] = 1
    inference_moe_w13_interleaved: Annotated[bool, STRICT] = True
    use_sconv: Annotated[bool, STRICT] = False
    # Layers below this index use a dense MLP; the rest are MoE (configs/inkling.py default 0).
    dense_mlp_idx: Annotated[int, _bounded(0, 4096, "a layer index is never negative", "past every real model's layer count")] = 0
    torch_dtype: str | None = "bfloat16"
    quantization_config: QuantizationConfig | None = None
    # Banded MTP head: text_config.mtp_local_layer_ids, or mtp_config.local_layer_ids, which
    # InklingMMConfig copies onto text_config (configs/inkling.py l.337-342).
    mtp_local_layer_ids: list[Any] | None = None
    mtp_config: MtpConfig | None = None
    # The multimodal towers (top-level keys of a multimodal config.json).
    audio_config: AudioConfig | None = None
    vision_config: VisionConfig | None = None
    # Stated module facts (not config.json keys): situations sglang 0.5.23's own wiring
    # never produces, stated to check a patched build or a single module.
    quant_method_wiring: QuantMethodWiring | None = None
    attn_prologue: StatedAttnPrologue | None = None


class Platform(_Strict):
    """Where the server will run. Default: one NVIDIA H200 (sm_90)."""

    name: str = "H200"
    device: Literal["cuda", "rocm", "xpu", "cpu"] = "cuda"
    compute_capability: tuple[int, int] = (9, 0)
    torch_float8: bool = True
    # None: derived. sglang 0.5.23 depends on nvidia-cutlass-dsl and vendors the FA4 CuTe
    # modules, so `cutlass.cute` imports wherever CUDA does; state false for a broken install.
    fa4_cute_available: bool | None = None
    # CUDA runtime of the torch build (0.5.23 pins torch 2.14.1 + cu13 wheels); the
    # is_blackwell/is_sm100 probes require >= 12.8, is_sm90 >= 12.3.
    cuda_version: tuple[int, int] = (13, 0)


PLATFORM_PRESETS: dict[str, dict[str, Any]] = {
    "h200": {"name": "H200", "compute_capability": (9, 0)},
    "h100": {"name": "H100", "compute_capability": (9, 0)},
    "a100": {"name": "A100", "compute_capability": (8, 0)},
    "l40s": {"name": "L40S", "compute_capability": (8, 9)},
    "b200": {"name": "B200", "compute_capability": (10, 0)},
    "gb200": {"name": "GB200", "compute_capability": (10, 0)},
    "rtx5090": {"name": "RTX 5090", "compute_capability": (12, 0)},
    "mi300x": {"name": "MI300X", "device": "rocm", "compute_capability": (9, 4)},
    "cpu": {"name": "CPU", "device": "cpu", "compute_capability": (0, 0), "torch_float8": False},
}


@dataclass(frozen=True)
class LoraRef:
    """One --lora-paths entry as sglang parses it into a LoRARef (lora_registry.py l.28-):
    name, path, the truthiness of `pinned`, what `int(pinned)` adds to the pinned count
    (lora_manager.py l.319; None where it raises) and, then, Python's text."""

    name: str
    path: str
    pinned: bool = False
    pinned_count: int | None = 0
    pinned_int_error: str | None = None


class TensorSpec(_Strict):
    """A tensor described by shape and dtype only: the checker never needs the bytes."""

    shape: list[Annotated[int, _DIM]]
    dtype: str = "bfloat16"


class PoolBuffers(_Strict):
    """The four shared-sink LoRA pool buffers exactly as `set_lora_info` receives them."""

    gate_up_lora_a: TensorSpec
    gate_up_lora_b: TensorSpec
    down_lora_a: TensorSpec
    down_lora_b: TensorSpec


class PoolManifest(_Strict):
    """Pool form: what the memory pool hands to the sink, per TP rank."""

    name: str = "pool"
    pool: PoolBuffers
    # A later `set_lora_info` with these buffers exercises the re-binding checks.
    rebind: PoolBuffers | None = None
    # Slots passed to `on_lora_slots_updated`, when a hot swap is to be checked.
    updated_slots: list[int] | None = None


class TensorTable:
    """Tensor name -> TensorSpec. A table of its own (pydantic's root model in the schema) so
    that tensor names are never mistaken for misspelt keys of TensorSpec by the unknown-key
    scan (they are free-form). Never changed once built."""

    __slots__ = ("root", "_content", "__weakref__")

    def __init__(self, root: dict[str, TensorSpec] | None = None):
        self.root: dict[str, TensorSpec] = {} if root is None else root
        self._content: tuple[tuple[str, tuple[int, ...], str], ...] | None = None

    @classmethod
    def model_construct(cls, root: dict[str, TensorSpec] | None = None) -> "TensorTable":
        return cls(root)

    def items(self) -> Any:
        return self.root.items()

    def __len__(self) -> int:
        return len(self.root)

    def __getitem__(self, name: str) -> TensorSpec:
        return self.root[name]

    def __iter__(self) -> Any:
        return iter(self.root)

    def __eq__(self, other: object) -> bool:
        return self.root == other.root if type(other) is TensorTable else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TensorTable(root={self.root!r})"

    def __reduce__(self) -> Any:
        return (TensorTable, (self.root,))

    def model_dump(self, *, mode: str = "python", **_: Any) -> dict[str, Any]:
        return {name: spec.model_dump(mode=mode) for name, spec in self.root.items()}

    @property
    def content(self) -> tuple[tuple[str, tuple[int, ...], str], ...]:
        """(name, shape, dtype) of every tensor, hashable: what facts derived from the table
        depend on (a memo key). The adapter reader interns alike tables, so this is built once
        per distinct table."""
        if self._content is None:
            self._content = tuple((name, tuple(spec.shape), spec.dtype) for name, spec in self.root.items())
        return self._content


class AdapterSource(_Strict):
    """Where a PEFT manifest was read from: set by the adapter-directory reader
    (`inkling_compat.inputs.adapter_dir`), absent for manifests written by hand."""

    directory: str
    # What sglang's loader would read: "safetensors" (headers read), "pickle" (*.bin / *.pt,
    # never unpickled: tensors unknown) or "none" (no weights file at all).
    weights_format: Literal["safetensors", "pickle", "none"] = "safetensors"
    weights_files: list[str] = field(default_factory=list)
    # sglang's warning text when added_tokens.json is not valid JSON (the file is then ignored).
    added_tokens_error: str | None = None
    # Why the adapter could not be read (then nothing else of it is checked), and which file.
    unreadable: str | None = None
    unreadable_file: str | None = None


class PeftManifest(_Strict):
    """PEFT form: adapter_config.json fields plus tensor names, shapes and dtypes."""

    # The adapter's name: its --lora-paths name (or the /load_lora_adapter lora_name).
    name: str = "adapter"
    # The path given with the name in --lora-paths (`name=path`); defaults to the name, as
    # for a bare `--lora-paths path`. sglang derives the adapter id quoted in some
    # messages from both (LoRARef.deterministic_id).
    path: str | None = None
    # adapter_config.json as is: kept untyped because sglang's own reads of it
    # (KeyError, type errors) are rules.
    adapter_config: dict[str, Any]
    # Every tensor of adapter_model.safetensors (name -> shape, dtype). Empty means an
    # adapter without weights; tensor-based checks then find nothing.
    tensors: TensorTable = field(default_factory=lambda: TensorTable({}))
    # Contents of added_tokens.json (token -> id), if the adapter ships one.
    added_tokens: dict[str, int] | None = None
    # Loaded as a pinned adapter (/load_lora_adapter `pinned`); for --lora-paths adapters
    # the `pinned` of their --lora-paths entry is what sglang uses.
    pinned: bool = False
    # Set when the manifest was read from an adapter directory.
    source: AdapterSource | None = None


AdapterManifest = PoolManifest | PeftManifest


# --- The plain reader -------------------------------------------------------------------------

_NO: Any = type("_No", (), {"__repr__": lambda self: "<not as it is>"})()
# The strings pydantic reads as a bool (lax mode, any case).
_BOOL_TEXT = {"0": False, "off": False, "f": False, "false": False, "n": False, "no": False, "1": True, "on": True, "t": True, "true": True, "y": True, "yes": True}


def read(cls: type, data: Any) -> Any:
    """`cls` (an input record class) built from `data` where every value is already of its
    field's type and within its bounds, exactly as validating it with the pydantic model of
    the same name would build it (tests/test_input_records.py); None for anything else (the
    caller validates it with pydantic, for its conversions and its error message)."""
    out = _record(cls, data)
    return None if out is _NO else out


def _record(cls: type, data: Any) -> Any:
    if type(data) is not dict:
        return _NO
    # (no value to read, no readers made: `ModelConfig()` without a model is its defaults, and
    # making a class's readers resolves every field's annotation)
    readers = (_READERS.get(cls) or _readers(cls)) if data else {}
    policy = cls._extra
    values: dict[str, Any] = {}
    extra: dict[str, Any] | None = {} if policy == "allow" else None
    for key, value in data.items():
        reader = readers.get(key)
        if reader is None:
            if policy == "forbid" or type(key) is not str:
                return _NO
            if extra is not None:
                extra[key] = value
            continue
        value = reader(value)
        if value is _NO:
            return _NO
        values[key] = value
    defaults, factories, required = cls.__dict__.get("_construction") or _construction(cls)
    for name in required:  # a required field missing: pydantic's error
        if name not in values:
            return _NO
    record = object.__new__(cls)
    own = record.__dict__
    own.update(defaults)
    for name, factory in factories:
        if name not in values:
            own[name] = factory()
    own.update(values)
    object.__setattr__(record, "model_fields_set", frozenset(values) if not extra else frozenset(values) | frozenset(extra))
    object.__setattr__(record, "model_extra", extra)
    return record


_READERS: dict[type, dict[str, Any]] = {}


def _readers(cls: type) -> dict[str, Any]:
    readers = _READERS.get(cls)
    if readers is None:
        readers = {name: _shared_reader(kind) for name, kind in _kinds(cls).items()}
        for name in _ARGPARSE_INTS if cls is ServerConfig else ():
            readers[name] = _argparse(readers[name], int)
        if cls is ServerConfig:
            for name in _ARGPARSE_FLOATS:
                readers[name] = _argparse(readers[name], float)
            inner = readers["lora_target_modules"]
            readers["lora_target_modules"] = lambda v: inner([v] if isinstance(v, str) else v)  # `--lora-target-modules all`
        if cls is Platform:
            for name in ("compute_capability", "cuda_version"):
                inner_tuple = readers[name]
                readers[name] = lambda v, inner_tuple=inner_tuple: inner_tuple(v) if type(v) is tuple else _NO
        _READERS[cls] = readers
    return readers


def field_records(cls: type) -> dict[str, type | None]:
    """Field name -> the input record the field holds directly or as Optional (None: none, and
    never the values of a list or dict), from the fields' kinds."""
    out: dict[str, type | None] = {}
    for name, kind in _kinds(cls).items():
        if kind[0] == "optional":
            kind = kind[1]
        found = RECORDS.get(kind[1]) if kind[0] == "record" else None
        out[name] = found if found is not None and issubclass(found, _Input) else None
    return out


def _kinds(cls: type) -> dict[str, tuple[Any, ...]]:
    """Field name -> kind (below): generated for the package's records; resolved from the
    annotations for any other class (a caller's subclass of one)."""
    if RECORDS.get(cls.__name__) is cls:
        from inkling_compat.inputs.field_types import FIELD_TYPES

        return FIELD_TYPES[cls.__name__]
    return {name: field_kind(spec.annotation, spec.metadata) for name, spec in cls.model_fields.items()}  # type: ignore[attr-defined]


_SHARED: dict[tuple[Any, ...], Any] = {}


def _shared_reader(kind: tuple[Any, ...]) -> Any:
    """`_reader`, made once for fields of one kind (a reader is a pure function of it: 23 of
    ServerConfig's fields are plain `bool`)."""
    found = _SHARED.get(kind)
    if found is None:
        found = _SHARED[kind] = _reader(kind)
    return found


def _argparse(inner: Any, kind: type) -> Any:
    """A typed server argument: only a value argparse's `type` converts (an int for an int)."""
    if kind is int:
        return lambda v: inner(v) if v is None or type(v) is int else _NO
    return lambda v: inner(v) if v is None or type(v) is float else _NO


# --- Field kinds ------------------------------------------------------------------------------
# A field's annotation (and its `Annotated` metadata: a bound, the strict-bool marker) as the
# plain reader reads it, as plain data: ("any",), ("int", low, high) (None: no bound), ("bool",
# strict), ("str",), ("float",), ("literal", values), ("list", item), ("tuple", items), ("dict",
# value), ("record", class name), ("optional", kind): also None, ("refused",): left to pydantic.
# The annotations are the source; inputs/field_types.py holds every field's kind, generated from
# them (`field_kind`, at publish time: python -m inkling_compat.publish.field_types), so a check reads
# its inputs without resolving an annotation (no typing, no eval); tests/test_field_types.py
# holds the two equal.


def field_kind(annotation: Any, metadata: list[Any]) -> tuple[Any, ...]:
    """A resolved annotation's kind (as `model_fields` gives it), for the generated module."""
    import types
    import typing

    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return field_kind(annotation.__origin__, list(annotation.__metadata__))
    if origin in (typing.Union, types.UnionType):
        options = [o for o in typing.get_args(annotation) if o is not type(None)]
        if len(options) != 1:
            return ("refused",)
        inner = field_kind(options[0], metadata)
        return ("optional", inner) if len(options) < len(typing.get_args(annotation)) else inner
    if annotation is typing.Any:
        return ("any",)
    if annotation is int:
        bounded = next((m for m in metadata if isinstance(m, _Bounded)), None)
        return ("int", None, None) if bounded is None else ("int", bounded.low, bounded.high)
    if annotation is bool:
        return ("bool", any(isinstance(m, _StrictBool) for m in metadata))
    if annotation in (str, float):
        return (annotation.__name__,)
    if origin is typing.Literal:
        return ("literal", typing.get_args(annotation))
    if origin is list:
        return ("list", field_kind(typing.get_args(annotation)[0], []))
    if origin is tuple:
        return ("tuple", tuple(field_kind(a, []) for a in typing.get_args(annotation)))
    if origin is dict:
        return ("dict", field_kind(typing.get_args(annotation)[1], []))
    if annotation is TensorTable or (isinstance(annotation, type) and issubclass(annotation, _Input)):
        return ("record", annotation.__name__)
    return ("refused",)


def _reader(kind: tuple[Any, ...]) -> Any:
    """The plain reader of a field of this kind: the value as it is where it has the kind's
    type (and bound), else _NO."""
    tag = kind[0]
    if tag == "optional":
        inner = _reader(kind[1])
        return lambda v: None if v is None else inner(v)
    if tag == "any":
        return lambda v: v
    if tag == "int":
        if kind[1] is not None or kind[2] is not None:
            bounded = _Bounded(kind[1], kind[2])
            return lambda v: v if type(v) is int and bounded.holds(v) else _NO
        return lambda v: v if type(v) is int else _NO
    if tag == "bool":
        if kind[1]:
            return lambda v: v if type(v) is bool else _NO
        return lambda v: v if type(v) is bool else _BOOL_TEXT.get(v.lower(), _NO) if type(v) is str and v.isascii() else _NO
    if tag == "str":
        return lambda v: v if type(v) is str else _NO
    if tag == "float":
        return lambda v: v if type(v) is float else _NO
    if tag == "literal":
        allowed = frozenset(kind[1])
        return lambda v: v if type(v) is str and v in allowed else _NO
    if tag == "list":
        read_item = _reader(kind[1])
        return lambda v: _items(v, read_item) if type(v) is list else _NO
    if tag == "tuple":
        read_items = [_reader(k) for k in kind[1]]
        return lambda v: _tuple(v, read_items)
    if tag == "dict":
        read_value = _reader(kind[1])
        return lambda v: _mapping(v, read_value) if type(v) is dict else _NO
    if tag == "record":
        record = RECORDS.get(kind[1])
        if record is None:  # (a caller's own record class nested: left to pydantic)
            return lambda v: _NO
        if record is TensorTable:
            return lambda v: v if type(v) is TensorTable else _table(v)
        return lambda v: v if type(v) is record else _record(record, v)  # (a record: as it is, as pydantic keeps a model)
    return lambda v: _NO


def _items(values: list[Any], read_item: Any, read_each: list[Any] | None = None) -> Any:
    out = []
    for i, v in enumerate(values):
        v = (read_each[i] if read_each is not None else read_item)(v)
        if v is _NO:
            return _NO
        out.append(v)
    return out


def _tuple(value: Any, read_items: list[Any]) -> Any:
    if type(value) is not tuple or len(value) != len(read_items):
        return _NO
    out = _items(list(value), None, read_items)
    return _NO if out is _NO else tuple(out)


def _mapping(values: dict[Any, Any], read_value: Any) -> Any:
    out = {}
    for k, v in values.items():
        if type(k) is not str:
            return _NO
        v = read_value(v)
        if v is _NO:
            return _NO
        out[k] = v
    return out


def _table(value: Any) -> Any:
    root = _mapping(value, lambda v: _record(TensorSpec, v)) if type(value) is dict else _NO
    return _NO if root is _NO else TensorTable(root)


def _as_data(value: Any) -> Any:
    """`value` with the records in it as the mappings pydantic validates."""
    if isinstance(value, _Input):
        return {k: _as_data(v) for k, v in value.model_dump().items()}
    if type(value) is TensorTable:
        return {k: _as_data(v) for k, v in value.root.items()}
    if type(value) is dict:
        return {k: _as_data(v) for k, v in value.items()}
    if type(value) is list:
        return [_as_data(v) for v in value]
    return value


def from_validated(model: Any) -> Any:
    """The record of a model validated by pydantic (inputs/input_schema.py): the same class
    name, values, stated fields and extra keys."""
    cls = RECORDS[type(model).__name__]
    if cls is TensorTable:
        return TensorTable({name: from_validated(spec) for name, spec in model.root.items()})
    values = {name: _from_value(getattr(model, name)) for name in cls.__fact_fields__}
    record = cls.model_construct(**values, **(model.__pydantic_extra__ or {}))  # type: ignore[attr-defined]
    object.__setattr__(record, "model_fields_set", frozenset(model.model_fields_set))
    return record


def _from_value(value: Any) -> Any:
    if type(value).__name__ in RECORDS and hasattr(value, "__pydantic_fields__"):
        return from_validated(value)
    if type(value) is list:
        return [_from_value(v) for v in value]
    return value


RECORDS: dict[str, type] = {
    cls.__name__: cls
    for cls in (EnvSwitches, StatedSink, DraftFacts, ServerConfig, QuantizationConfig, QuantMethodWiring, StatedAttnPrologue, AudioConfig, VisionConfig, MtpConfig, ModelConfig, Platform, TensorSpec, PoolBuffers, PoolManifest, TensorTable, AdapterSource, PeftManifest)
}
