"""Facts about the model checkpoint, its quantization and the attention setup.

Mirrors sglang 0.5.23's `inkling_common/quantization/config.py` (is this a TML NVFP4
checkpoint, how its block parses, what it excludes), `layers/quantization/modelopt_quant.py`
and `fp4_utils.py` (which NVFP4 kernels a platform gets), `arg_groups/model_overrides/inkling.py`
(attention backend defaults) and the geometry the attention layers derive per TP rank.
"""

from __future__ import annotations

import functools
import re

from inkling_compat.facts.types import AttentionFacts, AttnPrologueFacts, ModelFacts, Nvfp4Facts, QuantFacts, QuantWiring, RoutedMoeFacts
from inkling_compat.inputs.models import ModelConfig, Platform, ServerConfig

TYPE_CHECKING = False  # (typing only for the type checker: a check never imports it, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Sequence

# modelopt_quant.py ModelOptFp4Config.from_config
MODELOPT_QUANT_ALGOS = ("FP8", "NVFP4", "NVFP4_AWQ", "W4A16_NVFP4")
# attn.py InklingAttention.forward
INKLING_ATTENTION_BACKENDS = ("fa4", "triton")


def _capability(platform: Platform) -> tuple[int, int]:
    return (int(platform.compute_capability[0]), int(platform.compute_capability[1]))


def platform_probes(platform: Platform) -> dict[str, Any]:
    """utils/common.py `_check_cuda_device_version` probes (CUDA only, SM major + CUDA version)."""
    cuda = platform.device == "cuda"
    major = _capability(platform)[0]
    cuda_ok_128 = tuple(platform.cuda_version) >= (12, 8)
    return {
        "is_cuda": cuda,
        "is_sm90": cuda and major == 9 and tuple(platform.cuda_version) >= (12, 3),
        "is_sm100": cuda and major == 10 and cuda_ok_128,
        "is_blackwell": cuda and major in (10, 11, 12) and cuda_ok_128,
        "capability": list(_capability(platform)),
    }


def _generic_default_attention_backend(platform: Platform) -> str:
    """Approximation of overrides.get_default_attn_backend for an MHA model (used only for
    a half of the split backend flags the user left unset)."""
    probes = platform_probes(platform)
    if probes["is_sm90"]:
        return "fa3"
    if probes["is_sm100"]:
        return "trtllm_mha"
    return "flashinfer" if probes["is_cuda"] else "triton"


def attention_backends(config: ServerConfig, platform: Platform) -> AttentionFacts:
    """model_overrides/inkling.py: fa4 on SM90/SM100, triton elsewhere, only when no
    attention-backend flag is set; attn.py then accepts only fa4 or triton."""
    explicit = (config.attention_backend, config.prefill_attention_backend, config.decode_attention_backend)
    probes = platform_probes(platform)
    if all(value is None for value in explicit):
        default = "fa4" if probes["is_sm90"] or probes["is_sm100"] else "triton"
        prefill = decode = default
    else:
        base = config.attention_backend or _generic_default_attention_backend(platform)
        prefill = config.prefill_attention_backend or base
        decode = config.decode_attention_backend or base
    unsupported = [b for b in dict.fromkeys((prefill, decode)) if b not in INKLING_ATTENTION_BACKENDS]
    cute = platform.fa4_cute_available
    if cute is None:
        cute = probes["is_cuda"]
    fa4 = "fa4" in (prefill, decode)
    env = config.env
    # attn.py: the score_mod path (needs cutlass.cute) runs unless the sheared-bias kernel is
    # on and batch-invariant (deterministic) mode is off.
    score_mod_path = fa4 and not (env.SGLANG_OPT_USE_INKLING_SHEARED_BIAS and not config.enable_deterministic_inference)
    return AttentionFacts(
        unsupported=unsupported,
        fa4_serving=fa4,
        fa4_cute_available=bool(cute),
        fa4_score_mod_path=bool(score_mod_path),
    )


def _map_exclude_modules(exclude_modules: list[Any]) -> list[str]:
    """quantization/config.py `_map_exclude_modules`: checkpoint names -> sglang prefixes."""
    mapped: list[str] = []
    for module in exclude_modules:
        module = str(module)
        if "audio" in module or "visual" in module:
            mapped.append(module)
            continue
        module = module.removeprefix("model.")
        module = module.replace(".mlp.w13_dn", ".mlp.gate_up_proj").replace(".mlp.w2_md", ".mlp.down_proj")
        if module == "unembed":
            module = "lm_head"
        mapped.append(module)
    return sorted(set(mapped))


def _excluded(mapped: list[str], prefix: str) -> bool:
    """InklingQuantizationConfigBase.exclude_layer: plain substring match (no globs)."""
    return any(
        module in prefix
        or (prefix.startswith("language_model.") and module in prefix.removeprefix("language_model."))
        for module in mapped
    )


@functools.cache
def _has_digit() -> re.Pattern[str]:
    return re.compile(r"[0-9]")


@functools.cache
def _digits() -> re.Pattern[str]:
    return re.compile(r"[0-9]+")


class LayerExclusions:
    """`exclude_layer` (`_excluded`) on the prefixes `head + str(i) + tail` of every layer
    `i`, for a list of excluded modules of any length: each module is placed once against
    the template (as `X + digits + Y`, `X` a suffix of `head`, `Y` a prefix of `tail`), so a
    layer's answer is a few set lookups over the substrings of its number, not one substring
    test per module (a 50,000-module exclude list on 4,096 layers took more than 300 s).

    `head` must end and `tail` start with a non-digit (they do: "llm.layers." and ".mlp..."),
    so a module's digits next to `head` start the number and those next to `tail` end it."""

    def __init__(self, mapped: Sequence[str], head: str, tail: str, with_digits: Sequence[str] | None = None):
        self.always = False  # a module inside head or tail: every layer is excluded
        self.whole: set[str] = set()  # the number itself
        self.starts: set[str] = set()  # a prefix of the number
        self.ends: set[str] = set()  # a suffix of the number
        self.inside: set[str] = set()  # anywhere in the number
        if any(module in head or module in tail for module in mapped):
            self.always = True
            return
        # Only modules with a digit can overlap a layer number (`with_digits`: those, if known).
        for module in with_digits if with_digits is not None else [m for m in mapped if _has_digit().search(m)]:
            self._place(module, head, tail)

    def _place(self, module: str, head: str, tail: str) -> None:
        # X (a suffix of head) ends with head's last character: the places after it, and 0.
        starts = [0]
        last = head[-1]
        found = module.find(last, 0, len(head))
        while found != -1:
            starts.append(found + 1)
            found = module.find(last, found + 1, len(head))
        for k in starts:
            if k and not head.endswith(module[:k]):
                continue
            run = _digits().match(module, k)
            if run is None:
                continue
            digits, after = run.group(), module[run.end() :]
            if after and not tail.startswith(after):
                continue
            (self.whole if k and after else self.starts if k else self.ends if after else self.inside).add(digits)

    def __call__(self, layer: int) -> bool:
        if self.always:
            return True
        number = str(layer)
        if number in self.whole:
            return True
        size = len(number)
        return (
            any(number[:a] in self.starts for a in range(1, size + 1))
            or any(number[a:] in self.ends for a in range(size))
            or any(number[a:b] in self.inside for a in range(size) for b in range(a + 1, size + 1))
        )


def _first_missing_key(block: dict[str, Any]) -> str | None:
    """InklingQuantizationConfigBase.is_nvfp4 dereferences these keys unguarded."""
    node: Any = block
    for key in ("modelopt_quant_config", "quant_cfg", "*weight_quantizer"):
        if not isinstance(node, dict) or key not in node:
            return key
        node = node[key]
    if not isinstance(node, dict) or "num_bits" not in node:
        return "num_bits"
    bits = node["num_bits"]
    if isinstance(bits, (list, tuple)) and list(bits) == [2, 1] and "block_sizes" not in node:
        return "block_sizes"
    return None


def quantization_facts(model: ModelConfig) -> tuple[QuantFacts, bool]:
    """quantization/config.py: is this a TML NVFP4 checkpoint, how does Inkling's
    ModelOpt config parse, and which layers does it exclude. The second value says whether
    every MoE layer's shared_w13/shared_w2 is excluded (the sink stays BF16)."""
    quant = model.quantization_config
    raw = quant.model_dump(exclude_none=True) if quant is not None else {}
    if quant is not None and "exclude_modules" in quant.model_fields_set and quant.exclude_modules is None:
        raw["exclude_modules"] = None
    nested_form = isinstance(raw.get("quantization"), dict)
    # get_quantization_config: the nested form is read from its `quantization` block only.
    block: dict[str, Any] = raw["quantization"] if nested_form else raw
    missing_key = _first_missing_key(block) if quant is not None else None
    weight_cfg = None
    is_nvfp4 = False
    if quant is not None and missing_key is None:
        weight_cfg = block["modelopt_quant_config"]["quant_cfg"]["*weight_quantizer"]
        bits = weight_cfg.get("num_bits")
        scale_bits = (weight_cfg.get("block_sizes") or {}).get("scale_bits", []) if isinstance(weight_cfg.get("block_sizes"), dict) else []
        is_nvfp4 = isinstance(bits, (list, tuple)) and list(bits) == [2, 1] and list(scale_bits or []) == [4, 3]

    # ModelOptFp4Config.from_config({"quantization": block}) -- always the nested branch.
    algo = block.get("quant_algo")
    group_size = block.get("group_size")
    group_ok = isinstance(group_size, int) and not isinstance(group_size, bool)
    has_excludes_key = "exclude_modules" in block
    excludes_raw = block.get("exclude_modules", [])
    parse_error = None
    if is_nvfp4:
        if algo is None or not group_ok:
            parse_error = "missing_quant_algo"
        elif algo not in MODELOPT_QUANT_ALGOS:
            parse_error = "unsupported_algo"
        elif has_excludes_key and excludes_raw is None:
            parse_error = "missing_group_size_or_excludes"
        elif group_size != 16:
            parse_error = "inkling_group_size"
    built = is_nvfp4 and parse_error is None
    mapped = _map_exclude_modules(list(excludes_raw or []))

    # Ranges, never lists: the layer count is bounded at the input (inputs/models.py), and a
    # range costs nothing until `any` below walks it (only while layers are excluded).
    layers = range(max(model.num_hidden_layers, 0))
    first_moe = min(max(model.dense_mlp_idx, 0), len(layers))
    moe_layers = layers[first_moe:]
    dense_layers = layers[:first_moe]
    # Only whether each set is empty is read, so `any` stops at the first layer found; with no
    # excluded module (the common case) nothing is excluded and no exclusion is built at all.
    # The prefixes start with "llm.", never with "language_model." (_excluded's second case).
    with_digits = [m for m in mapped if _has_digit().search(m)]

    def excluded(tail: str) -> Any:
        return LayerExclusions(mapped, "llm.layers.", tail, with_digits) if mapped else (lambda layer: False)

    w13, w2 = excluded(".mlp.shared_experts.shared_w13_weight"), excluded(".mlp.shared_experts.shared_w2_weight")
    sink_fp4_layers = model.n_shared_experts > 0 and model.shared_expert_sink and any(not (w13(i) or w2(i)) for i in moe_layers)
    routed = excluded(".mlp.experts")
    routed_quantized = model.n_routed_experts > 0 and any(not routed(i) for i in moe_layers)
    attn = [excluded(f".attn.{name}") for name in ("qkvr", "wo_ud")]
    dense = [excluded(f".mlp.{name}") for name in ("gate_up_proj", "down_proj")]
    linears_quantized = any(not ex(i) for i in layers for ex in attn) or any(not ex(i) for i in dense_layers for ex in dense)
    facts = QuantFacts(
        present=quant is not None,
        method=raw.get("quant_method"),
        missing_key=missing_key,
        is_inkling_nvfp4=is_nvfp4,
        algo=algo if isinstance(algo, str) else None,
        parse_error=parse_error,
        inkling_config_built=built,
        nvfp4_serialized=built and "NVFP4" in str(algo),
        routed_moe_quantized=built and bool(routed_quantized),
        linears_quantized=built and bool(linears_quantized),
        mixed_precision_layers=raw.get("quant_algo", "").upper() == "MIXED_PRECISION"
        and isinstance(raw.get("quantized_layers"), dict)
        and bool(raw.get("quantized_layers")),
    )
    return facts, not sink_fp4_layers


def nvfp4_serving(config: ServerConfig, platform: Platform) -> Nvfp4Facts:
    """Which NVFP4 kernels this platform/config gets (modelopt_quant.py, fp4_utils.py)."""
    probes = platform_probes(platform)
    cap = tuple(probes["capability"])
    moe = config.moe_runner_backend
    is_lora = moe in ("lora_cutedsl", "lora_triton", "lora_marlin")
    # ModelOptNvFp4FusedMoEMethod.__init__
    if (moe == "auto" or is_lora) and probes["is_cuda"]:
        marlin_fallback = (8, 0) <= cap < (10, 0)
    else:
        marlin_fallback = moe in ("marlin", "experimental_sgl_marlin")
    # fp4_utils.initialize_fp4_gemm_config
    fp4 = config.fp4_gemm_backend
    if fp4 == "auto":
        if probes["is_sm100"]:
            fp4 = "flashinfer_cutedsl"
        elif probes["is_cuda"] and (8, 0) <= cap < (10, 0):
            fp4 = "marlin"
        else:
            fp4 = "flashinfer_cutlass"
    return Nvfp4Facts(
        moe_lora_non_marlin=moe in ("lora_cutedsl", "lora_triton"),
        moe_supported=probes["is_blackwell"] or marlin_fallback,
        dense_gemm_supported=fp4 == "marlin" or probes["is_blackwell"],
    )


def attn_prologue_facts(
    model: ModelConfig, config: ServerConfig, attention: AttentionFacts, head_dim: int, attn_tp: int
) -> AttnPrologueFacts:
    """attn.py InklingAttention.forward `fused_prologue` gate and the MXFP8 store selection."""
    fused = (
        attention.fa4_serving
        and model.use_sconv
        and head_dim == 128
        and config.env.SGLANG_OPT_USE_INKLING_FUSED_ATTN_PROLOGUE
    )
    # The FA4 MXFP8 pool exposes 5-D K/V scale buffers; the store needs page size 128.
    mxfp8 = fused and config.kv_cache_dtype == "mxfp8" and config.page_size == 128
    heads = max(model.num_attention_heads // attn_tp, 0)
    kv_heads = max(1, model.num_key_value_heads // attn_tp)
    derived = {"mxfp8_store": bool(mxfp8), "q_width": heads * head_dim, "kv_width": kv_heads * head_dim, "kv_scale_buffers": True}
    stated = model.attn_prologue.model_dump(exclude_none=True) if model.attn_prologue else {}
    return AttnPrologueFacts(**{**derived, **stated})


def routed_moe_facts(model: ModelConfig, config: ServerConfig, quant: QuantFacts | None) -> RoutedMoeFacts:
    """The routed experts' quant method: Inkling's own NVFP4 config when it is built
    (quantization/config.py get_quant_method: ModelOptNvFp4FusedMoEMethod, or unquantized for
    excluded experts), else the method --quantization names, else config.json's quant_method
    (model_config.py `_verify_quantization`)."""
    checkpoint = model.quantization_config
    checkpoint_method = str(checkpoint.quant_method) if checkpoint is not None and checkpoint.quant_method is not None else None
    name = config.quantization or checkpoint_method
    block: list[int] | None = None
    mxfp8 = False
    if quant is not None and quant.inkling_config_built:
        method = "modelopt_nvfp4" if quant.routed_moe_quantized else "unquantized"
    elif name is None:
        method = "unquantized"
    elif name in ("fp8", "mxfp8"):
        method = "fp8"
        # Fp8Config.from_config reads the checkpoint's block (an fp8 checkpoint); an online
        # --quantization fp8 over a BF16 checkpoint is per-tensor (no block).
        serialized = checkpoint_method is not None and ("fp8" in checkpoint_method)
        mxfp8 = name == "mxfp8" or (serialized and "mxfp8" in str(checkpoint_method))
        raw = getattr(checkpoint, "weight_block_size", None) if serialized else None
        if mxfp8:
            block = [1, 32]
        elif isinstance(raw, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in raw):
            block = list(raw)
    elif name == "modelopt_fp4":
        method = "modelopt_nvfp4"
    elif name == "compressed-tensors":
        method = "compressed_tensors"
    else:
        method = "other"
    moe_tp = max(max(config.tp_size, 1) // max(config.ep_size, 1), 1)
    return RoutedMoeFacts(
        quant_method=method,
        fp8_block_size=block,
        fp8_mxfp8=mxfp8,
        lora_runner_backend=_lora_runner_backend(config, method, config.quantization is not None or checkpoint is not None),
        intermediate_size_per_partition=model.intermediate_size // moe_tp,
    )


def _lora_runner_backend(config: ServerConfig, method: str, quantized: bool) -> str | None:
    """FusedMoEWithLoRA's runner backend in sglang 0.5.16-0.5.18 (lora/layers.py): the global
    --moe-runner-backend unless it is auto, else the base layer's quant method's runner, else
    triton; marlin on an unquantized layer runs triton. With auto, the server arguments resolve it
    for Inkling only under --moe-a2a-backend pplx (deep_gemm) or a quantization
    (_moe_runner_backend_quant_constraints, on the GPU's kind); an unquantized model's
    UnquantizedFusedMoEMethod builds a triton runner. A quantized one's method picks its runner
    on the GPU at start-up: None."""
    backend = config.moe_runner_backend
    if backend != "auto":
        return "triton" if backend == "marlin" and method == "unquantized" else backend
    if config.moe_a2a_backend == "pplx":
        return "deep_gemm"
    if method == "unquantized" and not quantized:  # (a quantization config excluding the experts still resolves it)
        return "triton"
    return None


def dflash_layer_ids(model: ModelConfig, config: ServerConfig) -> list[int] | None:
    """The ids configure_aux_hidden_state_capture hands Inkling's set_dflash_layers_to_capture
    (Inkling has no set_dspark_layers_to_capture), where sglang's checks before it pass:
    --return-aux-hidden-state-layer-ids on the capture-only path (handle_aux_hidden_state_capture,
    _check_capture_layer_ids_in_range), or a DFLASH draft's stated target_layer_ids
    (resolve_target_layer_ids: non-empty, each in [0, num_hidden_layers))."""
    method = (config.speculative_algorithm or "").upper()
    layers = model.num_hidden_layers
    if config.enable_return_aux_hidden_states:
        ids = config.return_aux_hidden_state_layer_ids
        if method not in ("DFLASH", "DSPARK") or not ids:
            return None
        if any(i < 0 for i in ids) or len(set(ids)) != len(ids) or any(i >= layers for i in ids):
            return None
        return list(ids)
    stated = config.draft.dflash_target_layer_ids if config.draft is not None else None
    if method != "DFLASH" or not stated or any(i < 0 or i >= layers for i in stated):
        return None
    return list(stated)


def _nvfp4_unaligned_linear(model: ModelConfig, quant: QuantFacts | None, attn_tp: int, tp: int) -> tuple[str, int] | None:
    """The first NVFP4 linear whose input size per TP rank is not a multiple of 16, with that
    size (ModelOptFp4LinearMethod.create_weights), in the order InklingDecoderLayer builds them.
    A row-parallel input that does not divide by its group is left to the earlier divide()."""
    if quant is None or not quant.nvfp4_serialized:
        return None
    mapped = _mapped_excludes(model)
    head_dim = model.head_dim or model.hidden_size // max(model.num_attention_heads, 1)
    local_ids = {i for i in (model.local_layer_ids or []) if isinstance(i, int) and not isinstance(i, bool)}
    first_moe = max(model.dense_mlp_idx, 0)
    dense_inter = model.dense_intermediate_size or model.intermediate_size
    shared = model.n_shared_experts * model.shared_experts_size * model.intermediate_size
    # Each linear: (tail of its prefix, input size, the group its input is split over, or 1),
    # for a full-attention or SWA layer, dense or MoE; layers of one kind give the same answer.
    def linears(local: bool, dense: bool) -> list[tuple[str, int, int]]:
        heads = (model.swa_num_attention_heads or model.num_attention_heads) if local else model.num_attention_heads
        dim = (model.swa_head_dim or head_dim) if local else head_dim
        found = [(".attn.qkvr", model.hidden_size, 1), (".attn.wo_ud", heads * dim, attn_tp)]
        if dense:
            found += [(".mlp.gate_up_proj", model.hidden_size, 1), (".mlp.down_proj", dense_inter, attn_tp)]
        elif model.n_shared_experts > 0 and not model.shared_expert_sink:
            found += [(".mlp.shared_experts.gate_up_proj", model.hidden_size, 1), (".mlp.shared_experts.down_proj", shared, tp)]
        return found

    unaligned = {}
    for local in (False, True):
        for dense in (False, True):
            bad = []
            for tail, size, group in linears(local, dense):
                if size % group == 0 and (size // group) % 16 != 0:
                    bad.append((tail, size // group))
            unaligned[local, dense] = bad
    if not any(unaligned.values()):
        return None
    # Only layers with an unaligned linear are walked, and an exclusion per tail is built once.
    exclusions: dict[str, Any] = {}
    for layer in range(max(model.num_hidden_layers, 0)):
        for tail, size in unaligned[layer in local_ids, layer < first_moe]:
            if tail not in exclusions:
                exclusions[tail] = LayerExclusions(mapped, "llm.layers.", tail) if mapped else (lambda i: False)
            if not exclusions[tail](layer):
                return f"llm.layers.{layer}{tail}", size
    return None


def _mapped_excludes(model: ModelConfig) -> list[str]:
    """The exclude_modules of the block Inkling's NVFP4 config reads, mapped to sglang prefixes."""
    quant = model.quantization_config
    raw = quant.model_dump(exclude_none=True) if quant is not None else {}
    block = raw["quantization"] if isinstance(raw.get("quantization"), dict) else raw
    return _map_exclude_modules(list(block.get("exclude_modules", []) or []))


def model_facts(
    model: ModelConfig, server_config: ServerConfig, platform: Platform, attention: AttentionFacts, quant: QuantFacts | None = None
) -> ModelFacts:
    """Geometry derived from config.json (sglang's InklingModelConfig defaults), plus how
    this model is served on this platform (NVFP4 kernels, attention prologue)."""
    config = server_config
    head_dim = model.head_dim or model.hidden_size // max(model.num_attention_heads, 1)
    swa_heads = model.swa_num_attention_heads or model.num_attention_heads
    swa_kv = model.swa_num_key_value_heads or model.num_key_value_heads
    tp = max(config.tp_size, 1)
    attn_tp = tp // max(config.dp_size, 1) if config.enable_dp_attention else tp
    attn_tp = max(attn_tp, 1)
    dflash_ids = dflash_layer_ids(model, config)
    unaligned = _nvfp4_unaligned_linear(model, quant, attn_tp, tp)
    wiring = QuantWiring(**model.quant_method_wiring.model_dump()) if model.quant_method_wiring else QuantWiring(
        routed_experts=None, shared_sink=None, shared_sink_forward=None
    )
    return ModelFacts(
        attn_tp_size=attn_tp,
        # attn.py InklingAttention.__init__ divisibility (full and SWA layers)
        heads_divisible=model.num_attention_heads % attn_tp == 0 and swa_heads % attn_tp == 0,
        kv_heads_divisible=all(
            (kv % attn_tp == 0) if kv >= attn_tp else (kv > 0 and attn_tp % kv == 0) for kv in (model.num_key_value_heads, swa_kv)
        ),
        nvfp4=nvfp4_serving(config, platform),
        attn_prologue=attn_prologue_facts(model, config, attention, head_dim, attn_tp),
        quant_wiring=wiring,
        is_pd_decode=config.disaggregation_mode == "decode",
        routed_moe=routed_moe_facts(model, config, quant),
        has_moe_layers=model.dense_mlp_idx < model.num_hidden_layers,
        mtp_banded=bool((model.mtp_config.local_layer_ids if model.mtp_config else None) or model.mtp_local_layer_ids),
        dflash_layer_ids=dflash_ids,
        dflash_layer_ids_distinct=dflash_ids is None or len(set(dflash_ids)) == len(dflash_ids),
        nvfp4_unaligned_linear=unaligned[0] if unaligned else None,
        nvfp4_unaligned_in_features=unaligned[1] if unaligned else None,
    )
