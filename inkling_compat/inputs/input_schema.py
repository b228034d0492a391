"""The input file formats as pydantic models: what an input the plain reader cannot take as it
is (inputs/models.py `read`) is validated against, for pydantic's conversions and its error
messages, and the source of schemas/*.schema.json. Imported only then, and by publish.

The fields, defaults and bounds are those of the plain records of inputs/models.py (the bounds
are shared; tests/test_input_records.py holds the declarations and the two readers equal).
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, Strict, field_validator
from pydantic_core import PydanticCustomError

from inkling_compat.inputs.field_bounds import (
    _ARGPARSE_FLOATS,
    _ARGPARSE_INTS,
    _DIM,
    _EXPERTS,
    _HEADS,
    _INT64,
    _LAYERS,
    _PARALLEL,
    _RANK,
    _SLOTS,
    _SMALL_COUNT,
    _VOCAB,
    _WIDTH,
    _bounded,
    _int_text,
)


def _argparse_text(value: Any) -> str:
    """The flag's text a YAML value stands for (what `--flag VALUE` would pass)."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return _int_text(value)
    if isinstance(value, (str, float)):
        return str(value)
    return type(value).__name__


def _argparse_converts(value: Any, kind: type) -> bool:
    if isinstance(value, bool):
        return False  # `--max-lora-rank True`: int("True") fails
    if kind is int:
        if isinstance(value, int):
            return True
        if isinstance(value, str) and len(value) <= 40:
            try:
                int(value)
            except ValueError:
                return False
            return True
        return False
    if isinstance(value, (int, float)):
        return True
    if isinstance(value, str) and len(value) <= 40:
        try:
            float(value)
        except ValueError:
            return False
        return True
    return False


def _argparse_check(name: str, kind: type, value: Any) -> Any:
    if value is None or _argparse_converts(value, kind):
        return value
    flag = "--" + name.replace("_", "-")
    if not isinstance(value, (bool, int, float, str)):
        raise PydanticCustomError(
            "argparse", "a {type} is not a value of {flag}, which takes one {kind} (sglang's argparse `type`)", {"type": type(value).__name__, "flag": flag, "kind": kind.__name__}
        )
    text = _argparse_text(value)
    raise PydanticCustomError(
        "argparse",
        "sglang's argparse refuses it: argument {flag}: invalid {kind} value: {text}",
        {"flag": flag, "kind": kind.__name__, "text": repr(text[:60])},
    )


class _Strict(BaseModel):
    """Our own file formats: unknown keys are reported (with a suggestion) by the loader."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


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
    arguments: dict[str, Any] = Field(default_factory=dict)
    # Environment switches and stated module facts
    env: EnvSwitches = Field(default_factory=EnvSwitches)
    sink: StatedSink | None = None
    draft: DraftFacts | None = None

    @field_validator("lora_target_modules", mode="before")
    @classmethod
    def _targets_as_list(cls, value: Any) -> Any:
        # sglang accepts `--lora-target-modules all` as a single token.
        return [value] if isinstance(value, str) else value

    @field_validator(*_ARGPARSE_INTS, mode="before")
    @classmethod
    def _argparse_int(cls, value: Any, info: Any) -> Any:
        return _argparse_check(info.field_name, int, value)

    @field_validator(*_ARGPARSE_FLOATS, mode="before")
    @classmethod
    def _argparse_float(cls, value: Any, info: Any) -> Any:
        return _argparse_check(info.field_name, float, value)


class QuantizationConfig(BaseModel):
    """The checkpoint's quantization block, as found in config.json or hf_quant_config.json."""

    model_config = ConfigDict(extra="allow", defer_build=True)

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


class AudioConfig(BaseModel):
    """config.json `audio_config` (configs/inkling.py InklingAudioConfig; sglang's defaults)."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    # The audio tower is built only when it has a width (models/inkling.py l.1004-1008).
    decoder_dmodel: Annotated[int | None, _bounded(None, None)] = None
    # Kept as written: InklingAudio asserts `audio_mode == "dmel"` on whatever the file holds.
    audio_mode: Any = "dmel"


class VisionConfig(BaseModel):
    """config.json `vision_config` (configs/inkling.py InklingVisionConfig; sglang's defaults)."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    decoder_dmodel: Annotated[int | None, _bounded(None, None)] = None
    vision_encoder_type: Any = "hmlp"
    # Bounded: hmlp.py factors them by trial division; real patches are 14-32 pixels, 1-2 frames.
    patch_size: Annotated[int, _bounded(-(1 << 20), 1 << 20, "a patch size", "real patches are at most a few dozen pixels")] = 16
    temporal_patch_size: Annotated[int, _bounded(-(1 << 20), 1 << 20, "a patch size", "real temporal patches are a few frames")] = 1


class MtpConfig(BaseModel):
    """config.json `mtp_config` (the MTP draft head's block, read by InklingMMConfig)."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    local_layer_ids: list[Any] | None = None


class ModelConfig(BaseModel):
    """The Inkling `config.json` fields the rules read; other keys are HF's and ignored."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    architectures: list[str] = Field(default_factory=lambda: ["InklingForConditionalGeneration"])
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
    shared_expert_sink: Annotated[bool, Strict()] = False
    shared_experts_size: Annotated[int, _SMALL_COUNT] = 1
    inference_moe_w13_interleaved: Annotated[bool, Strict()] = True
    use_sconv: Annotated[bool, Strict()] = False
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

    @field_validator("compute_capability", mode="before")
    @classmethod
    def _parse_capability(cls, value: Any) -> Any:
        if isinstance(value, (int, float)) or (isinstance(value, str) and "." in value):
            major, _, minor = str(value).partition(".")
            return (int(major), int(minor or 0))
        if isinstance(value, str) and value.startswith("sm_") and value[3:].isdigit():
            digits = value[3:]
            return (int(digits[:-1]), int(digits[-1]))
        return value

    @field_validator("cuda_version", mode="before")
    @classmethod
    def _parse_cuda_version(cls, value: Any) -> Any:
        if isinstance(value, (int, float, str)) and not isinstance(value, bool):
            major, _, minor = str(value).partition(".")
            return (int(major), int(minor or 0))
        return value


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


class TensorTable(RootModel[dict[str, TensorSpec]]):
    """Tensor name -> TensorSpec. A root model so that tensor names are never mistaken
    for misspelt keys of TensorSpec by the unknown-key scan (they are free-form)."""

    model_config = ConfigDict(defer_build=True)

    def items(self) -> Any:
        return self.root.items()

    def __len__(self) -> int:
        return len(self.root)

    def __getitem__(self, name: str) -> TensorSpec:
        return self.root[name]

    def __iter__(self) -> Any:  # type: ignore[override]
        return iter(self.root)

    @functools.cached_property
    def content(self) -> tuple[tuple[str, tuple[int, ...], str], ...]:
        """(name, shape, dtype) of every tensor, hashable: what facts derived from the table
        depend on (a memo key). A table is never changed once built; the adapter reader interns
        alike tables, so this is built once per distinct table."""
        return tuple((name, tuple(spec.shape), spec.dtype) for name, spec in self.root.items())


class AdapterSource(_Strict):
    """Where a PEFT manifest was read from: set by the adapter-directory reader
    (`inkling_compat.inputs.adapter_dir`), absent for manifests written by hand."""

    directory: str
    # What sglang's loader would read: "safetensors" (headers read), "pickle" (*.bin / *.pt,
    # never unpickled: tensors unknown) or "none" (no weights file at all).
    weights_format: Literal["safetensors", "pickle", "none"] = "safetensors"
    weights_files: list[str] = Field(default_factory=list)
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
    tensors: TensorTable = Field(default_factory=lambda: TensorTable({}))
    # Contents of added_tokens.json (token -> id), if the adapter ships one.
    added_tokens: dict[str, int] | None = None
    # Loaded as a pinned adapter (/load_lora_adapter `pinned`); for --lora-paths adapters
    # the `pinned` of their --lora-paths entry is what sglang uses.
    pinned: bool = False
    # Set when the manifest was read from an adapter directory.
    source: AdapterSource | None = None


AdapterManifest = PoolManifest | PeftManifest
