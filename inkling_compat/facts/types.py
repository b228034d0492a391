"""The facts rules read, as plain frozen records (inputs/record.py): the contract between Python and rules/.

`Facts` is the CEL variable `facts`; `AdapterFacts` (one model per adapter form) is
`adapter_facts`. Each field says what it means, which sglang 0.5.23 lines it models
(`sglang` in the JSON schema) and, in its annotation, which inputs it is derived from (`From`,
`derived_from` in the JSON schema; read by coverage through `derived_from`). None always means "unknown: the input it needs was not
given", never a value sglang would compute. `schemas/facts.schema.json` and docs/facts.md
are generated from these models; rules that read a path not defined here are refused
when they load (`inkling_compat.engine.paths`).
"""

from __future__ import annotations

from inkling_compat.inputs.record import Record
from inkling_compat.inputs.record import field as fact

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Annotated, Any, Literal, Sequence


# The inputs a fact can be derived from: "config" (server config), "model" (config.json),
# "platform", "adapter" (the adapter's manifest or adapter_config.json) and "weights" (its
# tensor table: safetensors headers, or a manifest's `tensors`); "start-up": what sglang
# decides only on the GPU it starts on (kernels found, the device's own checks), missing
# where a fact derived from it is None (engine/coverage.py).
INPUTS = ("config", "model", "platform", "adapter", "weights", "start-up")


class From:
    """Field metadata (`Annotated[bool, From("config")]`): the inputs a fact is derived from.

    A rule that reads a fact derived from an input that was not given (or could not be read)
    is *not checked*, not passed on placeholder values (engine/coverage.py). A field without
    it is derived from what its parent field is (`derived_from`); every field of `Facts` and
    of the adapter forms declares it (tests/test_coverage.py). The JSON schema lists it as
    `derived_from`."""

    __slots__ = ("inputs",)

    def __init__(self, *inputs: str):
        unknown = set(inputs) - set(INPUTS)
        if unknown:
            raise ValueError(f"unknown inputs {sorted(unknown)}: a fact is derived from some of {INPUTS}")
        self.inputs = tuple(inputs)

    def __repr__(self) -> str:
        return f"From{self.inputs!r}"

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> Any:
        schema = handler(core_schema)
        schema["derived_from"] = list(self.inputs)
        return schema


class _Facts(Record):
    """Published as a pydantic model with frozen=True, extra="forbid" (publish/facts_schema.py)."""

    __slots__ = ()


# --- global facts -------------------------------------------------------------------------


class LoraPath(_Facts):
    """One --lora-paths entry."""

    name: str = fact("Adapter name (`name=path` entries; a bare path is its own name).")
    path: str = fact("Adapter path as given.")
    pinned: bool = fact(
        "Pinned in a GPU slot (dict entries only): the truthiness of `pinned`, as validate_new_adapter tests it (a string \"false\" is pinned).",
        "arg_groups/lora_hook.py l.97-106; lora/lora_manager.py l.341, l.378",
    )


class PinnedIntFailure(_Facts):
    """The first --lora-paths entry whose `pinned` int() refuses."""

    name: str = fact("The entry's lora_name.")
    error: str = fact("What `int(pinned)` raises, Python's text (e.g. \"invalid literal for int() with base 10: 'false'\").")


class LoraPathJsonFailure(_Facts):
    """The first --lora-paths string that LoRAPathAction reads as JSON and refuses."""

    kind: Literal["invalid_json", "missing_keys"] = fact(
        "invalid_json: json.loads raises; missing_keys: the object lacks lora_name or lora_path."
    )
    text: str = fact("The entry as stripped (the assertion prints its repr()).")
    error: str | None = fact("json.loads' error text (invalid_json only).", default=None)


class AttentionFacts(_Facts):
    """Attention backends Inkling gets and the FA4 path they take."""

    unsupported: list[str] = fact(
        "Prefill/decode attention backends Inkling's attention rejects (not fa4 or triton), first first.",
        "arg_groups/model_overrides/inkling.py _inkling_overrides l.20-78; models/inkling_common/attn.py InklingAttention.forward l.721-",
    )
    fa4_serving: bool = fact("fa4 serves prefill or decode.", "arg_groups/model_overrides/inkling.py _inkling_overrides l.20-78")
    fa4_cute_available: bool = fact(
        "cutlass.cute imports on this platform (stated by the platform, else: it is CUDA).",
        "models/inkling_common/attn.py l.12-13 (score_mod import)",
    )
    fa4_score_mod_path: bool = fact(
        "FA4 runs the score_mod path (needs cutlass.cute): the sheared-bias kernel is off or deterministic inference is on.",
        "models/inkling_common/attn.py InklingAttention.forward l.926-945",
    )


class QuantFacts(_Facts):
    """How config.json's quantization_config parses for Inkling."""

    present: bool = fact("config.json has a quantization_config.")
    method: str | None = fact("quantization_config.quant_method (None: not stated).")
    missing_key: str | None = fact(
        "First key InklingQuantizationConfigBase.is_nvfp4 dereferences unguarded that is missing.",
        "models/inkling_common/quantization/config.py is_nvfp4 l.101-108",
    )
    is_inkling_nvfp4: bool = fact(
        "A TML NVFP4 checkpoint: weight quantizer num_bits (2, 1) with scale_bits (4, 3).",
        "models/inkling_common/quantization/config.py is_nvfp4 l.101-108",
    )
    algo: str | None = fact(
        "The quant_algo of the block ModelOptFp4Config.from_config reads (None: not stated, or not a string).",
        "models/inkling_common/quantization/config.py get_quantization_config l.259-272",
    )
    parse_error: Literal["missing_quant_algo", "unsupported_algo", "missing_group_size_or_excludes", "inkling_group_size"] | None = fact(
        "Why Inkling's ModelOpt FP4 config does not parse (None: it parses or is not NVFP4).",
        "layers/quantization/modelopt_quant.py ModelOptFp4Config.from_config l.1595-; models/inkling_common/quantization/config.py get_quantization_config l.259-272",
    )
    inkling_config_built: bool = fact("Inkling's NVFP4 quantization config is built.", "models/inkling_common/quantization/config.py get_quantization_config l.259-272")
    nvfp4_serialized: bool = fact("The built config's algo names NVFP4 (serialized FP4 weights).", "layers/quantization/modelopt_quant.py ModelOptFp4Config.from_config l.1595-")
    routed_moe_quantized: bool = fact(
        "Some MoE layer's routed experts are not excluded from quantization.", "models/inkling_common/quantization/config.py exclude_layer l.109-121, _map_exclude_modules l.70-90"
    )
    linears_quantized: bool = fact(
        "Some attention or dense-MLP linear is not excluded from quantization.", "models/inkling_common/quantization/config.py exclude_layer l.109-121"
    )
    mixed_precision_layers: bool = fact("quant_algo MIXED_PRECISION with a non-empty quantized_layers map.", "layers/quantization/modelopt_quant.py ModelOptMixedPrecisionConfig.from_config l.850-")


class SinkFacts(_Facts):
    """The shared-sink (shared experts) module sglang builds and its LoRA state."""

    kind: Literal["none", "dense_mlp", "fused", "batch_dense"] = fact(
        "Which module serves the shared experts.", "models/inkling_common/moe.py _build_inkling_shared_experts l.706-782"
    )
    sink_class: Literal["legacy", "v2"] | None = fact(
        "The LoRA wrapper of a batch-dense sink: legacy, or V2 with --lora-backend triton_v2 (None: no LoRA sink).",
        "models/inkling_common/lora.py InklingBatchDenseMLPWithLoRA l.12, InklingBatchDenseMLPWithLoRAV2 l.251",
    )
    class_name: str | None = fact("Python class name of `sink_class`.", "models/inkling_common/lora.py l.12, l.251")
    linearized_bf16_enabled: bool = fact(
        "The sink keeps linearized BF16 weights: (LoRA or SGLANG_OPT_LINEARIZED_SHARED_SINK) and interleaved w13 and not FP4.",
        "models/inkling_common/dense_mlp.py InklingBatchDenseMLP.__init__ l.156-, _linearized_bf16_enabled l.235; moe.py l.706-782",
    )
    w13_gate_up_contiguous: bool = fact(
        "w13 is de-interleaved into [gate | up] (linearized, LoRA on, triton_v2).", "models/inkling_common/dense_mlp.py InklingBatchDenseMLP.__init__ l.156-"
    )
    backend_name: Annotated[str, From("config")] = fact("--lora-backend.", "server_args.py (--lora-backend)")
    backend_has_dense_engine: Annotated[bool, From("config")] = fact("The LoRA backend carries the dense engine (`runner`): triton_v2 only.", "lora/backend/ (triton_v2 backend `runner`)")
    max_loras_per_batch: Annotated[int, From("config")] = fact("S: pool slots (--max-loras-per-batch).", "lora/mem_pool.py LoRAMemoryPool.__init__ l.136-")
    intermediate_size_per_partition: int = fact("F: the shared experts' intermediate size on one TP rank (I / tp).", "models/inkling_common/dense_mlp.py l.225-233 (intermediate_size_per_partition)")
    lora_attached: bool = fact(
        "LoRA is attached to the sink: a LoRA sink class and both gate_up_proj and down_proj targeted (or a stated class).",
        "lora/lora_manager.py init_lora_modules l.1041-1201",
    )
    given: list[str] = fact("Sink facts stated in the server config's `sink:` (they override the derived values).")


class PoolAllocation(_Facts):
    """Allocating the pool fails: its rank sizes it past any GPU's memory."""

    error_class: str = fact("What torch.zeros raises first: TypeError (a size past a 64-bit int), else RuntimeError (a storage size overflow, or torch.OutOfMemoryError).")
    bytes: int = fact("Bytes of the four shared-sink buffers over every layer (bf16).")
    rank: int = fact("R.")


class PoolFacts(_Facts):
    """The shared-sink LoRA pool: R, the layout and the four buffer shapes of one TP rank."""

    rank: int = fact(
        "R: --max-lora-rank, else the largest rank of the start-up adapters (--lora-paths and pool manifests).",
        "lora/lora_manager.py init_state l.699-, init_lora_shapes l.800-918",
    )
    shared_outer: bool = fact(
        "Shared-outer layout (E_a = E_b = 1): --experts-shared-outer-loras, else detected on the first start-up adapter.",
        "lora/lora_manager.py _detect_shared_outer_loras l.764-799",
    )
    gate_up_lora_a: list[int] = fact("[S, E_a, 2R, H]", "lora/mem_pool.py shared-sink buffers")
    gate_up_lora_b: list[int] = fact("[S, n, 2F, R]", "lora/mem_pool.py shared-sink buffers")
    down_lora_a: list[int] = fact("[S, n, R, F]", "lora/mem_pool.py shared-sink buffers")
    down_lora_b: list[int] = fact("[S, E_b, H, R]", "lora/mem_pool.py shared-sink buffers")
    allocation: PoolAllocation | None = fact(
        "Allocating the pool fails (None: it may fit): the four sink buffers over every layer take more than 1 TiB, past any GPU.",
        "lora/mem_pool.py init_buffers l.606-700 (torch.zeros per target module and layer)",
        default=None,
    )


class SharedAdapterPath(_Facts):
    """Two --lora-paths entries with one path under different names."""

    path: str = fact("The path as both entries give it.")
    loaded_name: str = fact("The name of the first entry with that path (already loaded).")
    name: str = fact("The name of the later entry (loaded again).")


class StartupFacts(_Facts):
    """What the --lora-paths (start-up) adapters decide for adapters loaded later."""

    max_r: int | None = fact("Largest r of the --lora-paths PEFT adapters (None: none has one).", "lora/lora_manager.py init_lora_shapes l.800-918")
    targets: list[str] = fact(
        "Union of the --lora-paths PEFT adapters' normalized targets (`all` expanded to Inkling's modules).",
        "lora/utils.py get_normalized_target_modules l.277-327",
    )
    shared_path: Annotated[SharedAdapterPath | None, From("config")] = fact(
        "The first --lora-paths entry, in load order, whose path (as written) an earlier entry loaded under another name (None: none, "
        "or a repeated name stops start-up first): validate_new_adapter warns and loads it again. Found in one pass.",
        "lora/lora_manager.py validate_new_adapter l.354-365",
        default=None,
    )


class AttnPrologueFacts(_Facts):
    """The fused attention prologue and its MXFP8 store."""

    mxfp8_store: bool = fact("The fused prologue stores K/V as MXFP8 (--kv-cache-dtype mxfp8, page size 128).", "models/inkling_common/attn.py fused_prologue l.762-771")
    q_width: int = fact("Query width on one attention TP rank (heads / attn_tp * head_dim).", "models/inkling_common/attn.py InklingAttention.__init__ l.283-")
    kv_width: int = fact("K/V width on one attention TP rank.", "models/inkling_common/attn.py InklingAttention.__init__ l.283-")
    kv_scale_buffers: bool = fact("The FA4 MXFP8 pool exposes 5-D K/V scale buffers.", "models/inkling_common/attn.py InklingAttention.forward l.721-")


class Nvfp4Facts(_Facts):
    """Which NVFP4 kernels this platform and config get."""

    moe_lora_non_marlin: bool = fact("--moe-runner-backend lora_cutedsl or lora_triton.", "layers/quantization/modelopt_quant.py ModelOptNvFp4FusedMoEMethod l.2362-")
    moe_supported: bool = fact("NVFP4 MoE kernels exist here: Blackwell, or the Marlin fallback.", "layers/quantization/modelopt_quant.py ModelOptNvFp4FusedMoEMethod.__init__ l.2362-")
    dense_gemm_supported: bool = fact("NVFP4 dense GEMM exists here: Marlin or Blackwell.", "layers/quantization/fp4_utils.py initialize_fp4_gemm_config l.149-164")


class QuantWiring(_Facts):
    """Stated quant-method wiring (config.json `quant_method_wiring`)."""

    routed_experts: str | None = fact("Stated quant method class of the routed experts (None: not stated).")
    shared_sink: str | None = fact("Stated quant method class of the shared sink (None: not stated).")
    shared_sink_forward: str | None = fact("Stated forward of the shared sink's quant method (None: not stated).")


class RoutedMoeFacts(_Facts):
    """The routed experts' FusedMoE on one rank: its quant method and the sizes MoE runners check."""

    quant_method: Literal["unquantized", "fp8", "modelopt_nvfp4", "compressed_tensors", "other"] = fact(
        "Family of the routed experts' quant method: --quantization, else config.json's quant_method (Inkling's own NVFP4 config "
        "when it is a TML NVFP4 checkpoint: modelopt_nvfp4 unless the experts are excluded).",
        "models/inkling_common/quantization/config.py get_quant_method l.180-205; layers/quantization/fp8.py Fp8MoEMethod l.1477-",
    )
    fp8_block_size: list[int] | None = fact(
        "Fp8Config.weight_block_size for an fp8 method: config.json's weight_block_size ([1, 32] for MXFP8; None: per-tensor, "
        "e.g. --quantization fp8 on a BF16 checkpoint).",
        "layers/quantization/fp8.py Fp8Config.from_config l.346-385, Fp8MoEMethod.__init__ l.1490-1500",
    )
    fp8_mxfp8: bool = fact("An fp8 method with MXFP8 weights (quant_method mxfp8).", "layers/quantization/fp8.py Fp8Config.from_config l.348")
    lora_runner_backend: Annotated[str | None, From("config", "model", "start-up")] = fact(
        "sglang 0.5.16-0.5.18: the backend of the MoeRunner FusedMoEWithLoRA builds for the LoRA path: an explicit "
        "--moe-runner-backend (marlin on unquantized experts: triton); with auto, deep_gemm under --moe-a2a-backend pplx "
        "(server_args.py), triton for an unquantized model (UnquantizedFusedMoEMethod's runner); None where auto is the "
        "quant method's runner, which it picks on the GPU at start-up (the rules reading it are not checked).",
        "lora/layers.py FusedMoEWithLoRA.__init__ l.982-1003 (0.5.17, 0.5.18; 0.5.16: l.947-968); layers/quantization/unquant.py create_moe_runner l.672-697",
    )
    intermediate_size_per_partition: int = fact(
        "The routed experts' intermediate size on one MoE-TP rank: intermediate_size // (tp_size // ep_size).",
        "layers/moe/fused_moe_triton/layer.py FusedMoE.__init__ (w2_weight.shape[2])",
    )


class ModelFacts(_Facts):
    """Model geometry per TP rank and how the model is served here."""

    attn_tp_size: Annotated[int, From("config")] = fact("Attention TP size: tp / dp with DP attention, else tp.", "layers/dp_attention.py compute_dp_attention_world_info l.445-")
    heads_divisible: bool = fact("Full and SWA attention heads divide by attn_tp_size.", "models/inkling_common/attn.py InklingAttention.__init__ l.316")
    kv_heads_divisible: bool = fact("Full and SWA KV heads divide, or are divided by, attn_tp_size.", "models/inkling_common/attn.py InklingAttention.__init__ l.320-322")
    nvfp4: Annotated[Nvfp4Facts, From("config", "platform")] = fact("Which NVFP4 kernels this platform/config gets.")
    attn_prologue: AttnPrologueFacts = fact("The fused attention prologue (derived, or stated in config.json's attn_prologue).")
    quant_wiring: Annotated[QuantWiring, From("model")] = fact("Stated quant method wiring (config.json quant_method_wiring).")
    is_pd_decode: Annotated[bool, From("config")] = fact("--disaggregation-mode decode.", "server_args.py")
    routed_moe: RoutedMoeFacts = fact("The routed experts' quant method and per-rank sizes.")
    has_moe_layers: Annotated[bool, From("model")] = fact(
        "Some decoder layer is an MoE layer: dense_mlp_idx < num_hidden_layers (a layer below dense_mlp_idx builds a dense MLP, "
        "one at or past it an InklingMoE).",
        "models/inkling.py InklingDecoderLayer.__init__ l.381",
    )
    mtp_banded: bool = fact(
        "A banded MTP head: mtp_config.local_layer_ids (copied onto text_config) or text_config.mtp_local_layer_ids is non-empty.",
        "configs/inkling.py InklingMMConfig.__init__ l.337-342; models/inkling.py InklingForConditionalGenerationMTP.__init__ l.1792",
    )
    dflash_layer_ids: list[int] | None = fact(
        "The layer ids Inkling's set_dflash_layers_to_capture receives once sglang's checks before it pass: "
        "--return-aux-hidden-state-layer-ids (--enable-return-aux-hidden-states with DFLASH or DSPARK: non-empty, non-negative, "
        "distinct, below num_hidden_layers), or, with --speculative-algorithm DFLASH, the draft's target_layer_ids stated in the "
        "server config's `draft:` (each in [0, num_hidden_layers)) (None: neither).",
        "arg_groups/validation_hook.py handle_aux_hidden_state_capture l.697-753; model_runner_components/spec_aux_hidden_state.py "
        "l.90-125; speculative/dflash_utils.py resolve_target_layer_ids l.556-588",
    )
    dflash_layer_ids_distinct: bool = fact(
        "No id of dflash_layer_ids repeats (true when it is None).", "models/inkling.py InklingCausalLLM.set_dflash_layers_to_capture l.751"
    )
    nvfp4_unaligned_linear: Annotated[str | None, From("config", "model")] = fact(
        "The first linear layer (its prefix) that Inkling's NVFP4 config quantizes, in the order the model builds them, whose "
        "input size per TP rank is not a multiple of 16: attn.qkvr (hidden_size), attn.wo_ud (heads x head_dim of the layer's "
        "full or SWA attention / attention TP), a dense layer's mlp.gate_up_proj (hidden_size) and mlp.down_proj "
        "(dense_intermediate_size / attention TP), an MoE layer's unsunk shared experts mlp.shared_experts.gate_up_proj "
        "(hidden_size) and .down_proj (n_shared_experts x shared_experts_size x intermediate_size / TP); excluded ones skipped "
        "(None: every one is a multiple, or the config is not NVFP4).",
        "layers/quantization/modelopt_quant.py ModelOptFp4LinearMethod.create_weights l.1822-1825; models/inkling_common/attn.py "
        "InklingAttention.__init__ l.335-356; models/inkling.py InklingDecoderLayer.__init__ l.354-393; "
        "models/inkling_common/moe.py _build_inkling_shared_experts l.770-780; configs/inkling.py InklingModelConfig.__init__ l.77-92",
    )
    nvfp4_unaligned_in_features: Annotated[int | None, From("config", "model")] = fact(
        "The input size per TP rank of nvfp4_unaligned_linear (None when that is None).",
        "layers/quantization/modelopt_quant.py ModelOptFp4LinearMethod.create_weights l.1822",
    )


class PinRefusal(_Facts):
    """The load validate_new_adapter refuses as a pinned adapter (adapter-pin-all-slots)."""

    name: str = fact("The adapter's name.")
    startup: bool = fact("A --lora-paths entry (init_lora_adapters wraps the message: \"Failed to load LoRA adapter <name>: ...\"); else a run-time load.")


class FleetFacts(_Facts):
    """Cross-adapter aggregates (one pass, instead of CEL filter/map over `adapters`)."""

    runtime_names: list[str] = fact("PEFT adapters not in --lora-paths (loaded at run time), in order.")
    runtime_unpinned_names: list[str] = fact("... of those, the unpinned ones.")
    duplicate_runtime_names: list[str] = fact("Adapters not in --lora-paths whose name occurs more than once.")
    startup_copy_failure: str | None = fact(
        "The first --lora-paths adapter whose copy into its pool slot fails in the replay (adapter_facts.pool_fit; None: none, or not replayed: "
        "no model or no weights).",
        "lora/mem_pool.py load_lora_weight_to_buffer l.920-1111",
        default=None,
    )
    pin_refusal: PinRefusal | None = fact(
        "The first load refused because pinned adapters would fill every slot: start-up entries in order, then pinned run-time loads; the check tests "
        "`pinned`'s truthiness, the count adds `int(pinned)` (2 counts twice, \"0\" counts zero) (None: no load is refused).",
        "lora/lora_manager.py validate_new_adapter l.377-383, _load_lora_adapter l.319",
        default=None,
    )
    startup_outer_reference: bool | None = fact(
        "Shared-outer layout of the first --lora-paths adapter that has one (None: no such adapter).",
        "lora/lora_manager.py _detect_shared_outer_loras l.764-799",
    )
    outer_conflict_id: str | None = fact("lora_id of the first --lora-paths adapter disagreeing with that layout.", "lora/lora_manager.py _detect_shared_outer_loras l.764-799")


# --- per-adapter facts --------------------------------------------------------------------


class PaddedDims(_Facts):
    """A shape that CEL can index safely."""

    ndim: int = fact("Number of dimensions.")
    dim: list[int] = fact("The first four sizes, padded with -1 (safe to index in CEL).")
    last: int = fact("The last size (-1 for a 0-D shape).")


class BufferDims(_Facts):
    """The four shared-sink buffers."""

    gate_up_lora_a: PaddedDims
    gate_up_lora_b: PaddedDims
    down_lora_a: PaddedDims
    down_lora_b: PaddedDims


class BindingFailure(_Facts):
    """A failure of set_lora_info, the re-bind or a slot update."""

    step: Literal["set_lora_info", "rebind", "slots"]
    kind: str = fact("Who raises: sglang itself, torch inside sglang's code, or python (e.g. unpacking).")
    error_class: str
    message: str


class BindingSteps(_Facts):
    """Which binding steps completed."""

    set_lora_info: bool
    rebind: bool
    slots: bool


class Binding(_Facts):
    """What the LoRA sink does with the pool manifest's buffers."""

    first: BindingFailure | None = fact("The first failure (None: every step completes).")
    completed: BindingSteps = fact("Which steps completed (a step not asked for counts as completed).")


class ExtraTokenEmbedding(_Facts):
    """A new-token embedding tensor whose rows are not the adapter's added-token count."""

    name: str = fact("The tensor's name (after sglang's unembed_tokens -> lm_head rename).")
    rows: int = fact("Its first dimension.")


class LayerOutOfRange(_Facts):
    """A tensor of a layer past the model's last."""

    name: str
    layer: int
    num_layers: int


class ReshapeFailure(_Facts):
    """A torch reshape failure of the shared-sink normalization."""

    name: str
    shape: list[int]
    size: int
    site: str


class CatFailure(_Facts):
    """A torch.cat the normalization makes that torch refuses (split gate/up or q/k/v factors
    whose shapes do not fit together)."""

    message: str = fact("torch's RuntimeError text on CPU tensors (sglang loads adapter weights on the CPU).")


class SliceFailure(_Facts):
    """A rejection by the sink's slice methods."""

    error_class: str
    message: str
    site: str
    n: int | None = None
    value: int | None = None
    name: str


class ScalingFailure(_Facts):
    """What Python raises computing `lora_alpha / r` on adapter_config.json's values."""

    error_class: str = fact("TypeError (a value that is not a number), ZeroDivisionError (r is 0, 0.0 or false) or OverflowError (an int quotient past a float).")
    message: str = fact("Python's text, e.g. \"unsupported operand type(s) for /: 'int' and 'str'\".")


class IndexedSharedFailure(_Facts):
    """A per-expert shared-expert factor on a layer that has no shared MoE LoRA module."""

    name: str = fact("The weight's normalized name.")
    layer: int = fact("Its layer.")


class TargetFailure(_Facts):
    """A layer weight with no pool target module."""

    name: str
    layer: int
    targets: list[str] = fact("The pool's target modules, sorted (sglang prints them as a set: `pyset` in a message).")


class PoolFit(_Facts):
    """A failure copying the adapter into a pool slot."""

    kind: str = fact(
        "dict_entries, expert_dim, unexpected_format, expert_out_of_range, shape_mismatch, not_expert_weights (a packed factor "
        "that is not 3-D in a per-expert buffer), or a slice failure's kind."
    )
    module: str | None = None
    value: int | None = None
    weight: list[int] | None = None
    # A dimension may be 2**64 or more (a zero-element tensor's axis repeated or concatenated
    # by the loader): the messages name these lists through params that read the typed
    # value (every digit), as in CEL such an int is a double.
    expert: int | None = None
    buffer: list[int] | None = None
    layer: int | None = None
    tp_rank: int | None = None
    site: str | None = None
    name: str | None = None


class PoolPartial(_Facts):
    """A shared-outer factor in a per-expert pool."""

    layer: int
    site: str
    name: str
    experts: int


class PoolAdapterFacts(_Facts):
    """A pool manifest: the shared-sink buffers as set_lora_info receives them."""

    form: Annotated[Literal["pool"], From("adapter")]
    name: Annotated[str, From("adapter")]
    pool: Annotated[BufferDims, From("adapter")] = fact("The four buffers' shapes.", "models/inkling_common/lora.py set_lora_info l.41-, V2 l.276-")
    rebind: Annotated[BufferDims | None, From("adapter")] = fact("Shapes of a second set_lora_info (None: no re-bind).", "models/inkling_common/lora.py set_lora_info l.41-, V2 l.276-")
    binding: Annotated[Binding | None, From("adapter", "config", "model")] = fact(
        "What set_lora_info, the re-bind and slot updates do (None: no LoRA attached to the sink).",
        "models/inkling_common/lora.py set_lora_info l.41-/l.276-, on_lora_slots_updated l.115-/l.360-",
    )


class ConfigTypeMismatch(_Facts):
    """An adapter_config.json field whose type is not the one PEFT writes."""

    field: str = fact("The field: r, lora_alpha, use_rslora, use_dora, rank_pattern, alpha_pattern or modules_to_save.")
    type: str = fact("The Python type name json.load gives its value (`str`, `list`, ...).")
    truthy: bool | None = fact("The value's truthiness where sglang or PEFT tests it (r, lora_alpha, use_rslora, use_dora; None: not tested, or not a JSON value).", default=None)


class PeftOwnFacts(_Facts):
    """What a PEFT adapter decides by itself, before the pool is known (facts/adapter.py)."""

    form: Annotated[Literal["peft"], From("adapter")]
    name: Annotated[str, From("adapter")]
    lora_id: Annotated[str, From("adapter")] = fact("LoRARef.deterministic_id (uuid5 of name and path).", "lora/lora_registry.py deterministic_id l.47-")
    r: Annotated[int | None, From("adapter")] = fact("adapter_config `r` (None: absent or not an int; a boolean is the int Python makes of it, true 1, false 0).", "lora/lora_config.py LoRAConfig.__init__ l.42-60")
    r_type: Annotated[str, From("adapter")] = fact("Python type name of adapter_config `r` as json.load gives it (`NoneType` when null or absent).", "lora/lora_config.py l.43")
    scaling_failure: Annotated[ScalingFailure | None, From("adapter")] = fact(
        "What `self.scaling = lora_alpha / r` raises on these values (None: it computes).", "lora/lora.py LoRAAdapter.__init__ l.71"
    )
    scaling_not_finite: Annotated[bool, From("adapter")] = fact(
        "lora_alpha / r computes but is NaN or infinite, in Python or once rounded to float32 (json.load reads NaN, Infinity and 1e999 as floats; "
        "lora_B * scaling on a bf16 tensor computes in float32, and the backends keep scalings in float32).",
        "lora/lora.py LoRAAdapter.__init__ l.71; lora/mem_pool.py l.1307-1361; lora/backend/chunked_backend.py l.240",
    )
    scaling_python: Annotated[float | None, From("adapter")] = fact(
        "lora_alpha / r as Python computes it on the JSON values, r a float included (None: either is absent or not a number, r is zero, or it raises).",
        "lora/lora.py LoRAAdapter.__init__ l.71",
        default=None,
    )
    scaling_past_float32: Annotated[bool, From("adapter")] = fact(
        "scaling_python is finite but past float32's range (about 3.4e38): an infinity once the pool or a backend holds it.", default=False
    )
    config_type_mismatches: Annotated[list[ConfigTypeMismatch], From("adapter")] = fact(
        "adapter_config.json fields sglang reads loosely or not at all whose type is not PEFT's (r true, a boolean lora_alpha, use_rslora, use_dora, rank_pattern, alpha_pattern, modules_to_save), in that order.",
    )
    scaling_sglang: Annotated[float | None, From("adapter")] = fact("lora_alpha / r (None: either unknown).", "lora/lora.py l.71")
    scaling_peft: Annotated[float | None, From("adapter")] = fact("PEFT's scaling (rsLoRA: lora_alpha / sqrt(r)); sglang uses lora_alpha / r.", "lora/lora.py l.71")
    rank_pattern_mismatch: Annotated[list[str], From("adapter")] = fact("rank_pattern entries whose rank differs from r (sglang ignores rank_pattern).")
    alpha_pattern_set: Annotated[bool, From("adapter")] = fact("alpha_pattern is set (sglang ignores it).")
    target_kind: Annotated[Literal["missing", "list", "shorthand", "string", "dict", "none", "other"], From("adapter")] = fact(
        "What `target_modules` is.", "lora/utils.py get_normalized_target_modules l.277-327"
    )
    target_type: Annotated[str, From("adapter")] = fact("Python type name of `target_modules`.")
    target_item_type: Annotated[str | None, From("adapter")] = fact(
        "Python type name of the first item of a list `target_modules` that is not a string (None: all are strings, or not a list).",
        "lora/utils.py get_normalized_target_modules l.323-324 (`name.split`)",
    )
    normalized_targets: Annotated[list[str], From("adapter")] = fact("Normalized target module names (`all` for the shorthands).", "lora/utils.py l.277-327")
    use_dora: Annotated[bool, From("adapter")]
    use_rslora: Annotated[bool, From("adapter")]
    peft_type_state: Annotated[Literal["missing", "not_string", "lora", "other"], From("adapter")] = fact("adapter_config peft_type.", "lora/lora.py l.67")
    peft_type_type: Annotated[str, From("adapter")] = fact("Python type name of adapter_config peft_type (`NoneType` when null or absent).", "lora/lora.py l.67 (`.lower()`)")
    missing_config_keys: Annotated[list[str], From("adapter")] = fact("Of target_modules, r, lora_alpha: those absent.", "lora/lora_config.py l.42-60")
    added_tokens_beyond_vocab: Annotated[int, From("adapter", "model")] = fact("Added tokens with an id at or past the base vocab.", "lora/lora_config.py LoRAConfig.__init__ l.26-")
    tensor_count: Annotated[int, From("adapter", "weights")]
    extra_token_embedding: Annotated[ExtraTokenEmbedding | None, From("adapter", "weights", "model")] = fact(
        "The first tensor outside the layers named *input_embeddings* / *output_embeddings* (not embed_tokens / lm_head) whose "
        "first dimension is not added_tokens_beyond_vocab (None: none).",
        "lora/lora.py _process_weight l.194-200",
        default=None,
    )
    layer_out_of_range: Annotated[LayerOutOfRange | None, From("adapter", "weights", "model")] = fact("First tensor of a layer past the model's last.", "lora/lora.py _process_weight l.164-200")
    embedding_weight_names: Annotated[list[str], From("adapter", "weights")] = fact(
        "embed_tokens / lm_head tensors kept (targeted), sorted, as the EAGLE warning joins them with ', '.",
        "lora/lora.py _process_weight l.164-200; lora/utils.py warn_if_adapter_targets_embeddings l.14-",
    )
    normalizes_shared_sink: Annotated[bool, From("adapter", "model")] = fact("The loader reshapes flat shared-sink factors (Inkling base, n > 0).", "lora/lora.py l.317-370")
    reshape_failure: Annotated[ReshapeFailure | None, From("adapter", "weights", "model")] = fact("First torch reshape failure of the shared-sink normalization.", "lora/lora.py l.317-370")
    cat_failure: Annotated[CatFailure | None, From("adapter", "weights")] = fact(
        "First torch.cat the normalization makes that torch refuses (sglang raises it while loading the adapter).",
        "lora/lora.py normalize_gate_up_proj l.462-501 (torch.cat l.485), normalize_qkv_proj l.264-315, normalize_inkling_qkvr_proj l.218-262",
    )
    slice_failure: Annotated[SliceFailure | None, From("adapter", "weights", "config", "model")] = fact(
        "First unnumbered shared-sink factor the sink's slice methods reject (the loader did not reshape it).",
        "models/inkling_common/lora.py slice_moe_lora_{a,b}_weights l.138-212",
    )


class PeftAdapterFacts(PeftOwnFacts):
    """A PEFT adapter (directory or manifest) as sglang maps and loads it.

    Its own facts (`PeftOwnFacts`, facts/adapter.py), then what load_lora_weight_to_buffer
    does with it in the pool (facts/in_pool.py)."""

    unmatched_weight_names: Annotated[list[str], From("adapter", "weights", "config")] = fact("Normalized weights containing no pool target module.", "lora/mem_pool.py l.930-935")
    target_failure: Annotated[TargetFailure | None, From("adapter", "weights", "config")] = fact(
        "First layer weight get_target_module_name finds no target for.", "lora/utils.py l.351-370; mem_pool.py l.983"
    )
    pool_fit: Annotated[PoolFit | None, From("adapter", "weights", "config", "model")] = fact("First failure copying the adapter into a pool slot.", "lora/mem_pool.py load_lora_weight_to_buffer l.920-1111")
    pool_partial: Annotated[PoolPartial | None, From("adapter", "weights", "config", "model")] = fact("A shared-outer factor copied into a per-expert pool (only some experts).", "lora/mem_pool.py load_lora_weight_to_buffer l.920-1111")
    indexed_shared_without_sink: Annotated[IndexedSharedFailure | None, From("adapter", "weights", "config", "model")] = fact(
        "First per-expert shared-expert factor (`shared_experts.<N>.`, not 3-D) on a layer without the sink's LoRA module: a dense-MLP "
        "layer below dense_mlp_idx, with LoRA on the batch-dense sink (None: none, or another setup).",
        "lora/mem_pool.py load_lora_weight_to_buffer l.985-1020",
        default=None,
    )


class UnreadableAdapterFacts(_Facts):
    """An adapter directory that could not be read: only adapter-file-unreadable applies."""

    form: Annotated[Literal["unreadable"], From("adapter")]
    name: Annotated[str, From("adapter")]


# Told apart by `form` (the schema's discriminator); `X | Y` (types.UnionType): no typing.Union built at import.
AdapterFacts = PoolAdapterFacts | PeftAdapterFacts | UnreadableAdapterFacts


class InputsGiven(_Facts):
    """Which inputs the check was given. Facts derived from an input that was not given are
    computed from placeholder defaults (sglang's argument defaults for the server config; a
    model config with no shared experts for the model; one NVIDIA H200 (sm_90, CUDA 13.0)
    for the platform) and say nothing about the real one: they are unknown."""

    config: bool = fact("A server config was given (else every --flag is sglang's default).")
    model: bool = fact("A model config.json was given (else facts.model, facts.quant, facts.sink and facts.pool describe a placeholder model).")
    platform: bool = fact("A platform was given (else facts.attention and facts.model.nvfp4 assume one H200, sm_90).")
    model_architecture: str | None = fact(
        "The given config.json's `architectures`, joined with ', ' (a file that names no class but a `model_type`: 'a T model (model_type 'T', no architectures)'; "
        "None: no model given, or a config.json that sets none of the fields the checks read, e.g. `{}`)."
    )
    model_is_inkling: bool = fact(
        "The given config.json names one of sglang's Inkling model classes, or, naming none, an Inkling model_type (False: no model given, an empty one, "
        "or another model, e.g. LlamaForCausalLM); else the Inkling-only checks are not applicable (another model) or not checked (none read), "
        "and the other checks that read the model config are not checked.",
        "models/inkling.py EntryClass l.1991; configs/inkling.py l.430",
    )


class Facts(_Facts):
    """Global facts of one check (the CEL variable `facts`)."""

    lora_enabled: Annotated[bool, From("config")] = fact("LoRA is on: --enable-lora, else --lora-paths given.", "arg_groups/lora_hook.py check_lora_server_args l.33-182")
    lora_paths: Annotated[list[LoraPath], From("config")] = fact("--lora-paths as parsed into LoRARef entries.", "lora/lora_registry.py LoRARef l.28-")
    lora_paths_duplicate_name: Annotated[str | None, From("config")] = fact(
        "The first --lora-paths name that another entry lists with a different path (None: none): validate_new_adapter refuses the second. "
        "Computed in one pass (a CEL comprehension over the entries would be quadratic in them).",
        "lora/lora_manager.py validate_new_adapter l.356",
        default=None,
    )
    pinned_int_failure: Annotated[PinnedIntFailure | None, From("config")] = fact(
        "The first --lora-paths entry whose `int(pinned)` raises (None: every entry's converts): _load_lora_adapter counts pinned adapters with it "
        "after loading the weights, and LoRARef (a msgspec.Struct) does not check that `pinned` is a bool.",
        "lora/lora_manager.py _load_lora_adapter l.319, init_lora_adapters l.756-762; arg_groups/lora_hook.py l.97-106",
        default=None,
    )
    lora_paths_json_failure: Annotated[LoraPathJsonFailure | None, From("config")] = fact(
        "The first --lora-paths string entry that, stripped, starts with '{' and ends with '}' and that argparse's LoRAPathAction "
        "refuses (None: every such entry is a JSON object with lora_name and lora_path).",
        "arg_groups/argparse_actions.py LoRAPathAction.__call__ l.9-22",
        default=None,
    )
    target_modules: Annotated[list[str], From("config")] = fact(
        "The pool's target modules: --lora-target-modules (`all` resolved), else the union of the adapters' normalized targets.",
        "lora/lora_manager.py init_lora_shapes l.800-918; models/inkling.py supported_lora_modules l.955",
    )
    attention: Annotated[AttentionFacts, From("config", "platform")]
    quant: Annotated[QuantFacts, From("model")]
    sink: Annotated[SinkFacts, From("config", "model")]
    pool: Annotated[PoolFacts | None, From("config", "model")] = fact("The shared-sink pool sglang allocates (None: R unknown, or no shared experts).", "lora/mem_pool.py get_lora_A_shape l.424-, get_lora_B_shape l.527-")
    startup: Annotated[StartupFacts, From("config", "adapter")]
    model: Annotated[ModelFacts, From("config", "model")]
    fleet: Annotated[FleetFacts, From("config", "adapter")]
    inputs_given: Annotated[InputsGiven, From()] = fact("Which inputs were given; facts that depend on one that was not are unknown.")
    adapters: Annotated[list[AdapterFacts], From("adapter")] = fact(
        "Per-adapter facts in input order: rules read them as `adapter_facts` (one adapter) and `adapter_facts_list`."
    )


ADAPTER_FORMS: tuple[type[_Facts], ...] = (PoolAdapterFacts, PeftAdapterFacts, UnreadableAdapterFacts)


def _declared(field: Any) -> tuple[str, ...] | None:
    return next((m.inputs for m in field.metadata if isinstance(m, From)), None)


def _models_in(annotation: Any) -> list[type[Record]]:
    import typing

    if isinstance(annotation, type) and issubclass(annotation, Record):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def derived_from(path: Sequence[str]) -> tuple[str, ...] | None:
    """The inputs the value at `path` (a CEL variable path: `facts`, `adapter_facts`, then
    field names) is derived from: the `From` of the deepest field on the path that declares
    one (None: no field on it does, or `path` is no fact). A name past the fields (a CEL
    method, a list's elements) ends the walk; an adapter field is looked up in every form
    that has it."""
    import typing

    root, *rest = path
    models: list[type[Record]] = [Facts] if root == "facts" else list(ADAPTER_FORMS) if root == "adapter_facts" else []
    found = None
    for name in rest:
        fields = [m.model_fields[name] for m in models if name in m.model_fields]
        if not fields:
            break
        found = next((d for d in map(_declared, fields) if d is not None), found)
        # A list's elements are not reached by a path (only by CEL's macros over the list).
        models = [sub for field in fields if typing.get_origin(field.annotation) is not list for sub in _models_in(field.annotation)]
    return found
