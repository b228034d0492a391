"""Hostile inputs made from the bundled examples: recipes and their files.

`recipe(seed, index)` is a pure function of its arguments: a JSON-able dict naming a setup
(which example files are checked, and how) and one to three mutations (bytes, types, keys,
nesting, sizes, Unicode, file-system oddities, fleets). `materialize(recipe, directory)`
writes the files and returns the invocation (paths for `check()` / `check_fleet()` and the
matching command line). A failing case is reproduced from its recipe alone.

Values that Python cannot hold in a document and still write (integers beyond
`sys.get_int_max_str_digits()`, nesting deeper than the recursion limit) are sentinels in
the recipe (`{"$digits": ...}`, `{"$nest": ...}`) that the writers here emit as text.
"""

from __future__ import annotations

import copy
import json
import math
import os
import random
import struct
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLES = ROOT / "examples"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0  # chmod 000 does not stop root

# ---------------------------------------------------------------- the bundled examples


def _read_safetensors(path: Path) -> tuple[dict[str, Any], int]:
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + n]), len(raw) - 8 - n


def _yaml_doc(path: Path) -> dict[str, Any]:
    import yaml

    return yaml.safe_load(path.read_text())


SERVE = _yaml_doc(EXAMPLES / "serve.yaml")
BROKEN_SERVE = _yaml_doc(EXAMPLES / "broken" / "serve.yaml")
MODEL = json.loads((EXAMPLES / "config.json").read_text())
POOL = _yaml_doc(EXAMPLES / "adapter_pool.yaml")
BROKEN_POOL = _yaml_doc(EXAMPLES / "broken" / "adapter_pool.yaml")
ADAPTER_CONFIG = json.loads((EXAMPLES / "adapter" / "adapter_config.json").read_text())
HEADER, DATA_SIZE = _read_safetensors(EXAMPLES / "adapter" / "adapter_model.safetensors")
ADDED_TOKENS = {"<|endoftext|>": 200000, "<|tool|>": 200001}  # ids inside the base vocabulary (201024): fine as is
PLATFORM = {"name": "H200", "device": "cuda", "compute_capability": [9, 0], "torch_float8": True, "cuda_version": [13, 0]}
PEFT_MANIFEST = {
    "name": "peft-r1",
    "adapter_config": ADAPTER_CONFIG,
    "tensors": {k: {"shape": v["shape"], "dtype": "bfloat16"} for k, v in HEADER.items() if k != "__metadata__"},
}

# Fields a document may be given that the example leaves out (so a type swap reaches every field).
SERVER_FIELDS = [
    "enable_lora", "max_lora_rank", "lora_target_modules", "lora_paths", "max_loaded_loras", "max_loras_per_batch",
    "lora_eviction_policy", "lora_backend", "max_lora_chunk_size", "experts_shared_outer_loras",
    "lora_use_virtual_experts", "lora_strict_loading", "dtype", "quantization", "kv_cache_dtype", "tp_size", "ep_size",
    "dp_size", "attn_dp_size", "enable_dp_attention", "moe_dense_tp_size", "page_size", "load_format",
    "moe_runner_backend", "attention_backend", "speculative_algorithm", "disable_radix_cache", "env", "sink",
]
MODEL_FIELDS = [
    "architectures", "model_type", "vocab_size", "hidden_size", "intermediate_size", "dense_intermediate_size",
    "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "n_routed_experts",
    "n_shared_experts", "num_experts_per_tok", "shared_expert_sink", "shared_experts_size",
    "inference_moe_w13_interleaved", "use_sconv", "dense_mlp_idx", "torch_dtype", "quantization_config", "text_config",
]
PEFT_FIELDS = [
    "r", "lora_alpha", "target_modules", "use_rslora", "use_dora", "modules_to_save", "bias", "layers_to_transform",
    "layers_pattern", "rank_pattern", "alpha_pattern", "peft_type", "task_type", "base_model_name_or_path",
    "exclude_modules", "lora_dropout", "fan_in_fan_out",
]
PLATFORM_FIELDS = ["name", "device", "compute_capability", "torch_float8", "fa4_cute_available", "cuda_version"]

DTYPE_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8, "I8": 1, "U8": 1, "I16": 2, "I32": 4, "I64": 8, "BOOL": 1, "F8_E4M3": 1}

# ---------------------------------------------------------------- value pools


def digits(n: int, negative: bool = False) -> dict[str, Any]:
    """An integer of `n` decimal digits, written as text (Python's str() refuses > 4300)."""
    return {"$digits": ("-" if negative else "") + "9" * n}


def nest(kind: str, depth: int, leaf: Any = 1, style: str = "flow") -> dict[str, Any]:
    # block style indents each level: its text grows with depth squared, so it stays shallow
    return {"$nest": kind, "depth": depth, "leaf": leaf, "style": style if depth <= 1000 else "flow"}


LONG = 100_000
STRINGS = [
    "sixteen", "", " ", "16", "1e3", "0x10", "true", "null", "None", "-1", "\x00", "a\x00b", "\u202egnirts", "\u200f",
    "\ud800", "x\udfffy", "é", "😀", "\ufeff", "a" * LONG, "\n", "${HOME}", "../../etc/passwd", "٣",
]
INTS = [0, -1, 1, 2, 3, 7, 16, 2**31, 2**31 - 1, 2**32, 2**53 + 1, 2**62, 2**63, 2**63 - 1, 2**64, -(2**63) - 1, 10**20, 10**100]
FLOATS = [1.5, 0.0, -0.0, -0.5, 16.0, 1e308, 5e-324, math.inf, -math.inf, math.nan]
OTHERS = [None, True, False, [], [1], ["a"], [[]], [None], {}, {"a": 1}, {"": None}]


def pick_value(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.25:
        return rng.choice(STRINGS)
    if roll < 0.50:
        return rng.choice(INTS)
    if roll < 0.58:
        return digits(rng.choice([300, 4300, 4301, 5000, 20_000]), negative=rng.random() < 0.2)
    if roll < 0.70:
        return rng.choice(FLOATS)
    if roll < 0.93:
        return copy.deepcopy(rng.choice(OTHERS))
    return nest(rng.choice(["list", "dict"]), rng.choice([50, 400, 1000, 5000]), style=rng.choice(["flow", "block"]))


# ---------------------------------------------------------------- writers


# json.dumps of a str is one of these two (JSONEncoder.encode), without building an encoder per
# call: the headers of the size cases hold tens of thousands of strings.
_ENCODE_STR = (json.encoder.encode_basestring, json.encoder.encode_basestring_ascii)


def _scalar_json(value: Any, ascii_only: bool) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if isinstance(value, str):
        if not ascii_only:
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate can only be written as a \u escape
                ascii_only = True
        return _ENCODE_STR[ascii_only](value)
    raise TypeError(type(value))


_END = object()


def _members(v: dict | list, ascii_only: bool, indent: str | None, level: int) -> Any:
    """(the text before each member, the member) of a dict or list, then (the closing text, _END)."""
    if isinstance(v, dict):
        for n, (k, x) in enumerate(v.items()):
            yield ("," if n else "") + (f"\n{indent * (level + 1)}" if indent else "") + _scalar_json(str(k), ascii_only) + ": ", x
        yield (f"\n{indent * level}" if indent and v else "") + "}", _END
    else:
        for n, x in enumerate(v):
            yield (", " if n else ""), x
        yield "]", _END


def _inline(v: dict | list, ascii_only: bool, indent: str | None, level: int, depth: int) -> str | None:
    """The text of a container with no sentinel and no container more than `depth` levels
    down (a header's tensor entry, a list of numbers), else None (written by write_json's stack)."""
    if v.__class__ is list and all(x.__class__ is int for x in v):  # a shape, data offsets
        return "[" + ", ".join(map(str, v)) + "]"
    if isinstance(v, dict) and ("$digits" in v or "$yaml" in v or "$nest" in v):
        return None
    text = ["{" if isinstance(v, dict) else "["]
    for before, x in _members(v, ascii_only, indent, level):
        text.append(before)
        if isinstance(x, (dict, list)):
            inner = _inline(x, ascii_only, indent, level + 1, depth - 1) if depth else None
            if inner is None:
                return None
            text.append(inner)
        elif x is not _END:
            text.append(_scalar_json(x, ascii_only))
    return "".join(text)


def write_json(value: Any, ascii_only: bool = True, indent: str | None = None, raw_yaml: bool = False) -> str:
    """JSON text of `value`, sentinels included; iterative, so any nesting depth is written.

    The stack holds text (a str) and values still to write (("v", value, level)); a container's
    keys, separators, scalars and small containers become one text at once."""
    out: list[str] = []
    stack: list[Any] = [("v", value, 0)]
    while stack:
        item = stack.pop()
        if item.__class__ is str:
            out.append(item)
            continue
        _, v, level = item
        if isinstance(v, dict) and "$digits" in v:
            out.append(v["$digits"])
        elif isinstance(v, dict) and "$yaml" in v:  # YAML's own text (a date, !!binary, !!set): a string in JSON
            out.append(v["$yaml"] if raw_yaml else json.dumps(v["$yaml"]))
        elif isinstance(v, dict) and "$nest" in v:
            opener, closer = ("[", "]") if v["$nest"] == "list" else ('{"a":', "}")
            out.append(opener * v["depth"])
            stack.append(closer * v["depth"])
            stack.append(("v", v["leaf"], level))
        elif isinstance(v, (dict, list)):
            parts: list[Any] = []
            text = ["{" if isinstance(v, dict) else "["]
            for before, x in _members(v, ascii_only, indent, level):
                text.append(before)
                if isinstance(x, (dict, list)):
                    inner = _inline(x, ascii_only, indent, level + 1, 2)
                    if inner is None:
                        parts.append("".join(text))
                        parts.append(("v", x, level + 1))
                        text = []
                    else:
                        text.append(inner)
                elif x is not _END:
                    text.append(_scalar_json(x, ascii_only))
            parts.append("".join(text))
            stack.extend(reversed(parts))
        else:
            out.append(_scalar_json(v, ascii_only))
    return "".join(out)


def _yaml_flow(value: Any) -> str:
    """A YAML flow value: JSON text, with YAML's spelling of infinities and NaN."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    return write_json(value, ascii_only=False, raw_yaml=True)


def write_yaml(doc: Any) -> str:
    """Block style at the top (as people write serve.yaml), flow style below; a `$nest`
    sentinel of style block becomes indented block mappings / sequences."""
    if not isinstance(doc, dict) or "$nest" in doc or "$digits" in doc:
        return _yaml_value_block(doc, 0) + "\n"
    lines = []
    for key, value in doc.items():
        k = json.dumps(str(key), ensure_ascii=False) if not str(key).isidentifier() else str(key)
        if isinstance(value, dict) and value.get("$nest") and value.get("style") == "block":
            lines.append(f"{k}:\n{_yaml_value_block(value, 1)}")
        else:
            lines.append(f"{k}: {_yaml_flow(value)}")
    return "\n".join(lines) + "\n"


def _yaml_value_block(value: Any, level: int) -> str:
    if isinstance(value, dict) and value.get("$nest") and value.get("style") == "block":
        depth = value["depth"]
        if value["$nest"] == "dict":
            rows = [("  " * (level + i)) + "a:" for i in range(depth)]
            rows.append(("  " * (level + depth)) + _yaml_flow(value["leaf"]))
        else:
            rows = [("  " * (level + i)) + "-" for i in range(depth)]
            rows.append(("  " * (level + depth)) + _yaml_flow(value["leaf"]))
        return "\n".join(rows)
    return ("  " * level) + _yaml_flow(value)


def safetensors_bytes(header: Any, data_size: int | None = None) -> bytes:
    text = write_json(header).encode("utf-8", "surrogatepass")
    if data_size is None:
        data_size = _data_end(header)
    return struct.pack("<Q", len(text)) + text + b"\0" * max(0, min(data_size, 1 << 20))


def _data_end(header: Any) -> int:
    end = 0
    if isinstance(header, dict):
        for k, v in header.items():
            if k != "__metadata__" and isinstance(v, dict):
                offsets = v.get("data_offsets")
                if isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets):
                    end = max(end, offsets[1])
    return end if end or not isinstance(header, dict) else 0


def relaid(header: dict[str, Any]) -> dict[str, Any]:
    """`header` with its data_offsets laid out again in order from each shape and dtype (a
    legal file for any integer shape, zero-size axes included)."""
    out: dict[str, Any] = {}
    at = 0
    for k, v in header.items():
        if k == "__metadata__" or not isinstance(v, dict):
            out[k] = v
            continue
        shape, dtype = v.get("shape"), v.get("dtype")
        if not (isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape) and dtype in DTYPE_BYTES):
            out[k] = v
            continue
        size = math.prod(shape) * DTYPE_BYTES[dtype]
        if size > (1 << 20):  # data we will not write: keep its offsets as they were
            out[k] = v
            continue
        out[k] = dict(v, data_offsets=[at, at + size])
        at += size
    return out


# ---------------------------------------------------------------- setups and targets

# target name -> (relative path, format)
SINGLE_TARGETS = {
    "config": ("serve.yaml", "yaml"),
    "model": ("config.json", "json"),
    "platform": ("platform.yaml", "yaml"),
    "adapter_config": ("adapter/adapter_config.json", "json"),
    "safetensors": ("adapter/adapter_model.safetensors", "safetensors"),
    "added_tokens": ("adapter/added_tokens.json", "json"),
}
SETUPS = ["adapter_dir", "pool", "broken", "peft_manifest", "fleet", "no_model"]


def _base_docs(setup: str) -> dict[str, tuple[str, str, Any]]:
    """target -> (path, format, document) for a setup (before mutation)."""
    docs = {
        "config": ("serve.yaml", "yaml", copy.deepcopy(BROKEN_SERVE if setup == "broken" else SERVE)),
        "model": ("config.json", "json", copy.deepcopy(MODEL)),
        "platform": ("platform.yaml", "yaml", copy.deepcopy(PLATFORM)),
    }
    if setup in ("adapter_dir", "no_model"):
        docs.update(_adapter_docs("adapter"))
    elif setup == "pool":
        docs["manifest"] = ("pool.yaml", "yaml", copy.deepcopy(POOL))
    elif setup == "broken":
        docs["manifest"] = ("pool.yaml", "yaml", copy.deepcopy(BROKEN_POOL))
    elif setup == "peft_manifest":
        docs["manifest"] = ("peft.json", "json", copy.deepcopy(PEFT_MANIFEST))
    return docs


def _adapter_docs(folder: str) -> dict[str, tuple[str, str, Any]]:
    return {
        f"{folder}:adapter_config": (f"{folder}/adapter_config.json", "json", copy.deepcopy(ADAPTER_CONFIG)),
        f"{folder}:safetensors": (f"{folder}/adapter_model.safetensors", "safetensors", copy.deepcopy(HEADER)),
        f"{folder}:added_tokens": (f"{folder}/added_tokens.json", "json", copy.deepcopy(ADDED_TOKENS)),
    }


def _paths(doc: Any, prefix: tuple = (), limit: int = 200) -> list[tuple]:
    """Every path into `doc` (keys and list indices), containers and leaves."""
    out = [prefix]
    if len(out) >= limit:
        return out
    if isinstance(doc, dict) and "$nest" not in doc and "$digits" not in doc:
        for k, v in doc.items():
            out += _paths(v, prefix + (k,), limit)
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:8]):
            out += _paths(v, prefix + (i,), limit)
    return out


FIELDS_BY_KIND = {"config": SERVER_FIELDS, "model": MODEL_FIELDS, "platform": PLATFORM_FIELDS, "adapter_config": PEFT_FIELDS}

# ---------------------------------------------------------------- recipes

FAMILIES = ["bytes", "type", "keys", "nesting", "sizes", "unicode", "fs", "fleet", "caps", "values"]
WEIGHTS = [12, 30, 8, 9, 13, 9, 11, 8, 6, 12]
# Values that are not plain text, as sglang reads them: in any int/float argument of its table
# (or any argument), NaN, infinities, -0, integers past 64 bits, and YAML's dates, timestamps,
# binary values and sets (`$yaml`: written as YAML text, a string in JSON).
HOSTILE_VALUES: list[Any] = [
    math.nan, math.inf, -math.inf, -0.0, 2**63, 2**64, 10**100, -(2**63) - 1,
    {"$yaml": "2020-01-01"}, {"$yaml": "2020-01-01 10:00:00"}, {"$yaml": "2020-01-01T10:00:00Z"},
    {"$yaml": "!!binary aGVsbG8="}, {"$yaml": "!!set {a, b}"}, {"$yaml": "{a: 2020-01-01}"},
    {"$yaml": "{a: !!binary aGVsbG8=}"}, {"$yaml": "{a: !!set {b}}"}, {"$yaml": "[.nan, .inf, 2020-01-01]"},
    {"$yaml": "!!float nan"}, {"$yaml": "0x10"}, {"$yaml": "1_000"}, {"$yaml": "0o17"}, {"$yaml": "1e400"},
]
# The worst cases under the documented caps (docs/fuzz.md): long lists, many unknown keys or
# env entries, a pool re-bound with an axis no int64 product holds, NUL and control names.
CAPS_OPS = ["long_list", "many_unknown", "many_env", "rebind_huge", "control_key"]
FS_OPS = ["missing", "dir", "loop", "dangling", "outside", "chmod000", "fifo", "devnull", "devzero", "empty", "self_dir"]


def recipe(seed: int, index: int) -> dict[str, Any]:
    """Case `index` of `seed`; seed 0 is the list ISSUE_CASES (the named hostile inputs below)."""
    if seed == 0:
        name, family, setup, muts = ISSUE_CASES[index]
        return {"seed": 0, "index": index, "name": name, "family": family, "setup": setup, "fleet_size": 3, "muts": copy.deepcopy(muts)}
    rng = random.Random(f"{seed}:{index}")
    family = rng.choices(FAMILIES, WEIGHTS)[0]
    setup = "fleet" if family == "fleet" else rng.choice(SETUPS)
    r: dict[str, Any] = {"seed": seed, "index": index, "family": family, "setup": setup, "muts": []}
    if setup == "fleet":
        r["fleet_size"] = rng.randint(2, 5)
    targets = _target_names(r)
    count = 1 if rng.random() < 0.75 else rng.randint(2, 3)
    for _ in range(count):
        r["muts"].append(_mutation(rng, family, r, targets))
    if setup == "fleet" and rng.random() < 0.3:
        r["muts"].append({"op": "fleet_entry", "what": rng.choice(FLEET_ENTRIES)})
    return r


FLEET_ENTRIES = ["file", "fifo", "loop", "dangling", "outside_dir", "unicode_name", "rtl_name", "newline_name", "empty_dir", "many"]


def _target_names(r: dict[str, Any]) -> list[str]:
    if r["setup"] == "fleet":
        names = ["config", "model"]
        for i in range(r["fleet_size"]):
            names += [f"fleet/a{i}:adapter_config", f"fleet/a{i}:safetensors", f"fleet/a{i}:added_tokens"]
        return names
    names = ["config", "platform"]
    if r["setup"] != "no_model":
        names.append("model")
    if r["setup"] in ("adapter_dir", "no_model"):
        names += ["adapter:adapter_config", "adapter:safetensors", "adapter:added_tokens"]
    else:
        names.append("manifest")
    return names


def _kind(target: str) -> str:
    return target.split(":")[-1]


def _mutation(rng: random.Random, family: str, r: dict[str, Any], targets: list[str]) -> dict[str, Any]:
    if family == "fleet":  # mutations inside a fleet's adapters (the fleet must still report)
        adapter_targets = [t for t in targets if t.startswith("fleet/")]
        sub = rng.choices(["bytes", "type", "keys", "nesting", "sizes", "unicode", "fs"], [2, 4, 1, 2, 3, 1, 3])[0]
        return _mutation(rng, sub, r, adapter_targets)
    if family == "caps":
        return _caps_mutation(rng, r, targets)
    if family == "values":
        key = rng.choice(_numeric_keys() if rng.random() < 0.8 else _all_keys())
        return {"target": "config", "op": "set", "path": [key], "value": rng.choice(HOSTILE_VALUES)}
    target = rng.choice(targets)
    kind = _kind(target)
    if family == "sizes" and kind not in ("safetensors",) and rng.random() < 0.6:
        # integers of absurd sizes where real models have small ones
        target = rng.choice([t for t in targets if _kind(t) in ("config", "model", "adapter_config", "manifest", "safetensors")] or targets)
        kind = _kind(target)
    if family == "bytes":
        op = rng.choice(["flip", "truncate", "insert", "garbage", "empty", "double", "bom", "nul", "latin1", "crlf", "raw_surrogate"])
        return {"target": target, "op": op, "at": rng.random(), "n": rng.choice([1, 1, 2, 5, 50]), "rand": rng.getrandbits(32)}
    if family == "fs":
        op = rng.choice([o for o in FS_OPS if not (o == "chmod000" and IS_ROOT)])
        if kind in ("adapter_config", "safetensors", "added_tokens") and rng.random() < 0.3:
            target = target.split(":")[0] + ":(dir)"  # the adapter directory itself
        return {"target": target, "op": op}
    if family == "nesting":
        depth = rng.choice([30, 100, 400, 600, 1000, 5000, 50_000])
        where = "root" if rng.random() < 0.3 else "value"
        return {"target": target, "op": "nest", "where": where, "path": _some_path(rng, r, target), "value": nest(rng.choice(["list", "dict"]), depth, style=rng.choice(["flow", "flow", "block"]))}
    if family == "keys":
        op = rng.choice(["delete", "add_unknown", "rename_typo", "duplicate", "key_unicode"])
        return {"target": target, "op": op, "path": _some_path(rng, r, target), "name": rng.choice(["max_lora_rnk", "r ", "R", "\u202er", "\ud800", "a" * 5000, "", "null", "1"]), "rand": rng.getrandbits(16)}
    if family == "unicode":
        return {"target": target, "op": "set", "path": _some_path(rng, r, target, leaves=True), "value": rng.choice(STRINGS + ["\ud800" * 3, "\u202e" * 1000, "x" * 1_000_000])}
    if family == "sizes":
        if kind == "safetensors":
            return _size_mutation(rng, target)
        return {"target": target, "op": "set", "path": _some_path(rng, r, target, leaves=True, fields=True), "value": rng.choice(INTS[6:] + [digits(5000), digits(4301), digits(20), -(10**20), 10**6, 2**31, 0, -1])}
    # type swaps: any path of the document, or a field the example leaves out
    return {"target": target, "op": "set", "path": _some_path(rng, r, target, fields=True), "value": pick_value(rng)}


def _numeric_keys() -> list[str]:
    """sglang's int and float arguments, each as a config key (dest, or the flag's dash spelling)."""
    from inkling_compat.inputs.argument_table import table

    rows = [r for r in table()["arguments"] if r["type"] in ("int", "float", "human_readable_int") and r["options"]]
    return sorted({k for r in rows for k in (r["dest"], r["options"][0][2:])})


def _all_keys() -> list[str]:
    from inkling_compat.inputs.argument_table import table

    return sorted({r["dest"] for r in table()["arguments"] if r["options"] and r["action"] != "help"})


def _caps_mutation(rng: random.Random, r: dict[str, Any], targets: list[str]) -> dict[str, Any]:
    op = rng.choice(CAPS_OPS)
    documents = [t for t in targets if _kind(t) in ("config", "model", "adapter_config", "manifest", "platform")]
    if op == "rebind_huge" and "manifest" in targets and r["setup"] == "pool":
        return {"target": "manifest", "op": "caps_rebind", "buffer": rng.choice(["gate_up_lora_b", "down_lora_a", "gate_up_lora_a"]), "axis": rng.randrange(4), "value": rng.choice([2**62, 2**63 - 1, 2**40])}
    if op in ("many_env", "rebind_huge"):
        return {"target": "config", "op": "caps_keys", "under": "env", "count": rng.choice([1000, 5_000]), "name": "SGLANG_FAKE_"}
    if op == "many_unknown":
        return {"target": rng.choice(documents), "op": "caps_keys", "under": None, "count": rng.choice([100, 5_000]), "name": "unknown_key_"}
    if op == "control_key":
        return {"target": rng.choice(documents), "op": "caps_keys", "under": None, "count": rng.choice([1, 50]), "name": rng.choice(["\x1b[2J\x1b[H", "\x00", "\u202e", "\x85", "\x07"])}
    return {"target": rng.choice(documents), "op": "caps_list", "path": _some_path(rng, r, rng.choice(documents)) or ["x"], "count": rng.choice([99_000, 100_001, 300_000]), "style": rng.choice(["block", "flow"])}


def _some_path(rng: random.Random, r: dict[str, Any], target: str, leaves: bool = False, fields: bool = False) -> list:
    docs = _docs_for(r)
    if target not in docs:
        return []
    doc = docs[target][2]
    paths = [p for p in _paths(doc) if p]
    if leaves:
        paths = [p for p in paths if not isinstance(_get(doc, p), (dict, list))] or paths
    kind = _kind(target)
    if fields and kind in FIELDS_BY_KIND and rng.random() < 0.4:
        return [rng.choice(FIELDS_BY_KIND[kind])]
    if kind == "manifest" and "adapter_config" in doc and fields and rng.random() < 0.4:
        return ["adapter_config", rng.choice(PEFT_FIELDS)]
    return list(rng.choice(paths)) if paths else []


def _size_mutation(rng: random.Random, target: str) -> dict[str, Any]:
    op = rng.choice(["shape", "shape", "many_tensors", "header_len", "layer_id", "offsets", "data_short", "metadata"])
    out: dict[str, Any] = {"target": target, "op": "st_" + op, "rand": rng.getrandbits(32)}
    if op == "shape":
        out["shape"] = rng.choice([
            [2**62, 0, 2**62], [10**8, 0, 1], [0], [], [0, 1536], [1, 0], [2**63, 0], [2**64, 0], [10**20, 0],
            [digits(5000), 0], [1] * 64, [0] * 1000, [1, 1536, 1], [-1, 1536], [1.5, 1536], [1, "1536"], [True, 1536],
        ])
        out["relay"] = rng.random() < 0.8
    elif op == "many_tensors":
        out["count"] = rng.choice([100, 1000, 10_000, 30_000])
        out["zero"] = rng.random() < 0.5
    elif op == "header_len":
        out["value"] = rng.choice([0, 1, 2**63, 2**64 - 1, 100_000_001, 15_000])
    elif op == "layer_id":
        out["layer"] = rng.choice(["9" * 5000, "9" * 4301, "99999999999999999999", "-1", "01", "٣", "0" * 1000, "1e3", " 1", str(2**31), str(2**63)])
    elif op == "offsets":
        out["offsets"] = rng.choice([[0, 2**64], [2**63, 2**63], [digits(5000), digits(5000)], [-1, 3072], [3072, 0], [0], [0, 1, 2], "0,3072"])
    elif op == "data_short":
        out["size"] = rng.choice([0, 1, 3071, 15359, 15361, 10**6])
    elif op == "metadata":
        out["value"] = rng.choice([None, 1, [], {"format": 1}, {"a": {"b": 1}}, {"format": "\ud800"}, {"k" * 10000: "v"}, nest("dict", 5000)])
    return out


# ---------------------------------------------------------------- materializing


def _docs_for(r: dict[str, Any]) -> dict[str, tuple[str, str, Any]]:
    docs = _base_docs(r["setup"])
    if r["setup"] == "fleet":
        for i in range(r["fleet_size"]):
            docs.update(_adapter_docs(f"fleet/a{i}"))
    return docs


def _get(doc: Any, path: list) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _set(doc: Any, path: list, value: Any) -> Any:
    """`doc` with the value at `path` replaced (a missing key is added); the root when path is empty."""
    if not path:
        return value
    parent = doc
    for p in path[:-1]:
        try:
            parent = parent[p]
        except (KeyError, IndexError, TypeError):
            return doc
    try:
        parent[path[-1]] = value
    except (IndexError, TypeError):
        pass
    return doc


def materialize(r: dict[str, Any], directory: Path) -> dict[str, Any]:
    """Write the recipe's files under `directory`; return the invocation."""
    directory.mkdir(parents=True, exist_ok=True)
    docs = _docs_for(r)
    texts: dict[str, bytes] = {}
    extra_dup: dict[str, tuple[str, int]] = {}
    data_sizes: dict[str, int | None] = {}
    for m in r["muts"]:  # document-level mutations first
        t = m.get("target")
        if t not in docs:
            continue
        path, fmt, doc = docs[t]
        op = m["op"]
        if op == "set":
            doc = _set(doc, m["path"], m["value"])
        elif op == "nest":
            doc = m["value"] if m["where"] == "root" else _set(doc, m["path"] or ["x"], m["value"])
        elif op == "delete" and m["path"]:
            try:
                parent = _get(doc, m["path"][:-1])
                del parent[m["path"][-1]]
            except (KeyError, IndexError, TypeError):
                pass
        elif op in ("add_unknown", "key_unicode") and isinstance(doc, dict):
            doc[m["name"] if op == "key_unicode" else "max_lora_rnk"] = 32
        elif op == "rename_typo" and m["path"] and isinstance(doc, dict) and m["path"][0] in doc:
            k = m["path"][0]
            doc[(str(k)[:-1] + "x") if str(k) else "x"] = doc.pop(k)
        elif op == "duplicate":
            extra_dup[t] = (str(m["path"][0]) if m["path"] else "enable_lora", m["rand"])
        elif op == "caps_keys" and isinstance(doc, dict):
            keys = {f"{m['name']}{i:06d}": True for i in range(m["count"])}
            if m["under"] is None:
                doc.update(keys)
            else:
                doc[m["under"]] = dict(doc.get(m["under"]) or {}, **keys) if isinstance(doc.get(m["under"]), (dict, type(None))) else keys
        elif op == "caps_list":
            doc = _set(doc, m["path"], [0] * m["count"]) if m["path"] and isinstance(doc, dict) else {**doc, "x": [0] * m["count"]} if isinstance(doc, dict) else doc
            if m["style"] == "flow" and fmt == "yaml":
                fmt = "yaml_flow"
        elif op == "caps_rebind" and isinstance(doc, dict) and isinstance(doc.get("pool"), dict):
            rebind = {k: dict(v, shape=list(v["shape"])) for k, v in doc["pool"].items() if isinstance(v, dict) and isinstance(v.get("shape"), list)}
            if m["buffer"] in rebind and len(rebind[m["buffer"]]["shape"]) > m["axis"]:
                rebind[m["buffer"]]["shape"][m["axis"]] = m["value"]
            doc["rebind"] = rebind
        elif op.startswith("st_") and fmt == "safetensors" and isinstance(doc, dict):
            doc, size = _st_mutate(doc, m)
            data_sizes[t] = size if size is not None else data_sizes.get(t)
        docs[t] = (path, fmt, doc)
    for t, (path, fmt, doc) in docs.items():
        if fmt == "safetensors":
            raw = safetensors_bytes(doc, data_sizes.get(t))
            if any(m.get("op") == "st_header_len" and m.get("target") == t for m in r["muts"]):
                value = next(m["value"] for m in r["muts"] if m.get("op") == "st_header_len" and m.get("target") == t)
                raw = struct.pack("<Q", value % 2**64) + raw[8:]
        elif fmt == "yaml_flow":
            raw = (_yaml_flow(doc) + "\n").encode("utf-8", "surrogatepass")
        elif fmt == "json":
            raw = write_json(doc, ascii_only=(r["index"] % 2 == 0), indent="  " if r["index"] % 3 == 0 else None).encode("utf-8", "surrogatepass")
        else:
            raw = write_yaml(doc).encode("utf-8", "surrogatepass")
        if t in extra_dup:
            key, _ = extra_dup[t]
            raw = _duplicate_key(raw, fmt, key)
        texts[t] = raw
    for m in r["muts"]:  # then bytes
        t = m.get("target")
        if t in texts and m["op"] in BYTE_OPS:
            texts[t] = BYTE_OPS[m["op"]](texts[t], m)
    for t, raw in texts.items():
        p = directory / docs[t][0]
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(raw)
    outside = directory / "outside.json"
    outside.write_text(json.dumps(ADAPTER_CONFIG))
    uses_platform = any(m.get("target") == "platform" for m in r["muts"])
    inv: dict[str, Any] = {
        "config": str(directory / "serve.yaml"),
        "model": None if r["setup"] == "no_model" else str(directory / "config.json"),
        "platform": str(directory / "platform.yaml") if uses_platform else None,
        "adapters": [],
        "folders": [],
        "expect": "any",
    }
    if r["setup"] in ("adapter_dir", "no_model"):
        inv["adapters"] = [str(directory / "adapter")]
    elif r["setup"] == "fleet":
        inv["folders"] = [str(directory / "fleet")]
    else:
        inv["adapters"] = [str(directory / docs["manifest"][0])]
    for m in r["muts"]:  # then the file system (an op an earlier one made impossible is skipped)
        try:
            if m["op"] in FS_OPS:
                _fs_op(directory, docs, m, inv)
            elif m["op"] == "fleet_entry":
                _fleet_entry(directory / "fleet", m["what"], directory)
        except OSError:
            pass
    # A fleet whose own folder and config are fine must report per adapter: README promises a
    # broken adapter directory is a problem of that adapter.
    inv["watched"] = silent_ok_fields(r)  # (these may not end in a plain "ok")
    fleet = directory / "fleet"
    if (
        r["setup"] == "fleet"
        and all(str(m.get("target", "fleet/")).startswith("fleet/") for m in r["muts"])
        and any(os.path.isdir(fleet / name) for name in os.listdir(fleet))  # (else: "holds no adapter directory", exit 2)
    ):
        inv["expect"] = "report"
    return inv


def _st_mutate(doc: dict[str, Any], m: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
    rng = random.Random(m["rand"])
    names = [k for k in doc if k != "__metadata__"]
    op = m["op"]
    if op == "st_shape" and names:
        name = rng.choice(names)
        doc[name] = dict(doc[name], shape=m["shape"])
        if m.get("relay"):
            doc = relaid(doc)
        return doc, None
    if op == "st_many_tensors":
        base = dict(doc)
        for i in range(m["count"]):
            key = f"base_model.model.llm.layers.{i % 4096}.mlp.shared_experts.{'down' if i % 2 else 'gate_up'}_proj.lora_{'AB'[i % 3 % 2]}.weight.{i}"
            base[key] = {"dtype": "BF16", "shape": [0, 1536] if m["zero"] else [1, 4], "data_offsets": [0, 0]}
        return relaid(base), None
    if op == "st_layer_id" and names:
        name = rng.choice(names)
        doc = {(k.replace("layers.0.", f"layers.{m['layer']}.") if k == name else k): v for k, v in doc.items()}
        return doc, None
    if op == "st_offsets" and names:
        name = rng.choice(names)
        doc[name] = dict(doc[name], data_offsets=m["offsets"])
        return doc, None
    if op == "st_data_short":
        return doc, m["size"]
    if op == "st_metadata":
        doc["__metadata__"] = m["value"]
        return doc, None
    return doc, None


def _duplicate_key(raw: bytes, fmt: str, key: str) -> bytes:
    if fmt == "yaml":
        return raw + f"{key}: 1\n".encode()
    if fmt == "json":
        text = raw.rstrip()
        if text.endswith(b"}"):
            return text[:-1] + (b", " if len(text) > 2 else b"") + json.dumps(key).encode() + b": 1}"
    return raw


def _at(raw: bytes, m: dict[str, Any]) -> int:
    return int(m["at"] * len(raw)) if raw else 0


def _flip(raw: bytes, m: dict[str, Any]) -> bytes:
    rng = random.Random(m["rand"])
    b = bytearray(raw)
    for _ in range(m["n"]):
        if b:
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def _garbage(raw: bytes, m: dict[str, Any]) -> bytes:
    rng = random.Random(m["rand"])
    return bytes(rng.getrandbits(8) for _ in range(rng.choice([1, 7, 8, 100, 4096])))


BYTE_OPS = {
    "flip": _flip,
    "truncate": lambda raw, m: raw[: _at(raw, m)],
    "insert": lambda raw, m: raw[: _at(raw, m)] + _garbage(raw, m)[: m["n"] * 3] + raw[_at(raw, m) :],
    "garbage": _garbage,
    "empty": lambda raw, m: b"",
    "double": lambda raw, m: raw + raw,
    "bom": lambda raw, m: b"\xef\xbb\xbf" + raw,
    "nul": lambda raw, m: raw[: _at(raw, m)] + b"\0" + raw[_at(raw, m) :],
    "latin1": lambda raw, m: raw.replace(b"a", b"\xe9", 1),
    "crlf": lambda raw, m: raw.replace(b"\n", b"\r\n"),
    "raw_surrogate": lambda raw, m: raw.replace(b'"', b'"\xed\xa0\x80', 1),
}


def _fs_target(directory: Path, docs: dict[str, Any], target: str) -> Path:
    if target.endswith(":(dir)"):
        return directory / target.split(":")[0]
    return directory / docs[target][0]


def _fs_op(directory: Path, docs: dict[str, Any], m: dict[str, Any], inv: dict[str, Any]) -> None:
    if m["target"] not in docs and not m["target"].endswith(":(dir)"):
        return
    p = _fs_target(directory, docs, m["target"])
    op = m["op"]
    if op == "chmod000":
        if p.exists():
            os.chmod(p, 0)
        return
    _remove(p)
    if op == "missing":
        return
    if op == "dir":
        p.mkdir()
        (p / "inner.json").write_text("{}")
    elif op == "loop":
        os.symlink(p.name, p)
    elif op == "dangling":
        os.symlink(p.name + ".nowhere", p)
    elif op == "outside":
        os.symlink(directory / "outside.json" if not m["target"].endswith(":(dir)") else directory.parent, p)
    elif op == "fifo":
        os.mkfifo(p)
    elif op == "devnull":
        os.symlink("/dev/null", p)
    elif op == "devzero":
        os.symlink("/dev/zero", p)
    elif op == "empty":
        if m["target"].endswith(":(dir)"):
            p.mkdir()
        else:
            p.write_bytes(b"")
    elif op == "self_dir":  # a directory that is a symlink to its parent (a cycle through a folder)
        os.symlink(".", p)


def _remove(p: Path) -> None:
    import shutil

    if p.is_symlink() or (p.exists() and not p.is_dir()):
        p.unlink()
    elif p.is_dir():
        shutil.rmtree(p)


def _fleet_entry(fleet: Path, what: str, directory: Path) -> None:
    fleet.mkdir(parents=True, exist_ok=True)
    if what == "file":
        (fleet / "README.txt").write_text("not an adapter")
    elif what == "fifo":
        os.mkfifo(fleet / "pipe")
    elif what == "loop":
        os.symlink("loop", fleet / "loop")
    elif what == "dangling":
        os.symlink("nowhere", fleet / "dangling")
    elif what == "outside_dir":
        other = directory / "elsewhere"
        other.mkdir(exist_ok=True)
        (other / "adapter_config.json").write_text(json.dumps(ADAPTER_CONFIG))
        os.symlink(other, fleet / "elsewhere")
    elif what in ("unicode_name", "rtl_name", "newline_name"):
        name = {"unicode_name": "adaptér-😀", "rtl_name": "a\u202eb", "newline_name": "a\nb"}[what]
        d = fleet / name
        d.mkdir()
        (d / "adapter_config.json").write_text(json.dumps(ADAPTER_CONFIG))
        (d / "adapter_model.safetensors").write_bytes(safetensors_bytes(HEADER, DATA_SIZE))
    elif what == "empty_dir":
        (fleet / "empty").mkdir()
    elif what == "many":
        for i in range(40):
            d = fleet / f"m{i:03d}"
            d.mkdir()
            (d / "adapter_config.json").write_text(json.dumps(dict(ADAPTER_CONFIG, r=1 + i % 4)))
            (d / "adapter_model.safetensors").write_bytes(safetensors_bytes(HEADER, DATA_SIZE))


def cli_argv(inv: dict[str, Any], as_json: bool = False) -> list[str]:
    argv = ["check", "--config", inv["config"]]
    if inv["model"]:
        argv += ["--model", inv["model"]]
    if inv["platform"]:
        argv += ["--platform", inv["platform"]]
    for a in inv["adapters"]:
        argv += ["--adapter", a]
    for f in inv["folders"]:
        argv += ["--adapter-dir", f]
    if as_json:
        argv += ["--format", "json"]
    return argv


def undo_permissions(directory: Path) -> None:
    """chmod 000 files back, so the case directory can be removed."""
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            p = os.path.join(root, name)
            if not os.path.islink(p):
                try:
                    os.chmod(p, 0o700)
                except OSError:
                    pass


# ---------------------------------------------------------------- "ok" is a promise

# Fields the rules read, with what sglang / PEFT need of them: a case that gives one of them a
# value outside that may not end in a plain "ok" (`r: "sixteen"` is not a rank sglang can use).
POSITIVE_INTS = {
    "adapter_config": ("r",),
    "config": ("max_lora_rank", "max_loras_per_batch", "tp_size"),
    "model": ("hidden_size", "intermediate_size", "num_hidden_layers", "n_routed_experts"),
}
NUMBERS = {"adapter_config": ("lora_alpha",)}
ABSURD = 2**31  # no real model or server has a size this large


def _bad_positive_int(value: Any) -> bool:
    if isinstance(value, dict) and "$digits" in value:
        return True
    return type(value) is not int or value <= 0 or value >= ABSURD


# The least magnitude float32 rounds to an infinity (FLT_MAX plus half an ulp): sglang scales
# bf16 lora_B by lora_alpha / r in float32 (so lora_alpha 1e300 is an infinite scaling).
F32_OVERFLOW = 3.4028235677973366e38


def _bad_number(value: Any) -> bool:
    if isinstance(value, dict) and "$digits" in value:
        return False  # a huge alpha is a number (the scaling is computed from it)
    if type(value) not in (int, float):
        return True
    return math.isnan(value) or abs(value) >= F32_OVERFLOW  # (r is 1 in the examples)


def silent_ok_fields(r: dict[str, Any]) -> list[str]:
    """The watched fields a recipe sets to a value sglang / PEFT cannot use ("kind.field")."""
    out = []
    for m in r["muts"]:
        if m.get("op") not in ("set", "nest") or m.get("where") == "root":
            continue
        kind, path = _kind(m["target"]), list(m.get("path") or [])
        if kind == "manifest" and path[:1] == ["adapter_config"] and r["setup"] == "peft_manifest":
            kind, path = "adapter_config", path[1:]
        if len(path) != 1:
            continue
        if kind == "model" and r["setup"] == "no_model":
            continue
        field, value = path[0], m["value"]
        if kind == "config" and isinstance(value, list) and len(value) <= 1:
            # sglang's merger passes a list as words: `[]` leaves the flag out (its default is
            # used), `[x]` is `--flag x`
            if not value:
                continue
            value = str(value[0])
        if kind == "config" and isinstance(value, str):  # a server argument is argparse's text: int("16") is 16
            try:
                value = int(value)
            except ValueError:
                pass
        if field in POSITIVE_INTS.get(kind, ()) and _bad_positive_int(value):
            out.append(f"{kind}.{field}")
        elif field in NUMBERS.get(kind, ()) and _bad_number(value):
            out.append(f"{kind}.{field}")
    return out


# ---------------------------------------------------------------- the named hostile inputs (seed 0)


def _put(target: str, path: list, value: Any) -> dict[str, Any]:
    return {"target": target, "op": "set", "path": path, "value": value}


def _nest_at(target: str, path: list, depth: int, kind: str = "list", style: str = "flow") -> dict[str, Any]:
    return {"target": target, "op": "nest", "where": "value" if path else "root", "path": path, "value": nest(kind, depth, style=style)}


_LAYER = "base_model.model.llm.layers.0.mlp.shared_experts.down_proj.lora_A.weight"
ISSUE_CASES: list[tuple[str, str, str, list[dict[str, Any]]]] = [
    # (name, family, setup, mutations): one hostile input each, a value sglang cannot use
    *[(f"r-{v!r}", "type", "adapter_dir", [_put("adapter:adapter_config", ["r"], v)]) for v in ("sixteen", -1, 1.5, None, [1])],
    *[(f"lora_alpha-{v!r}", "type", "adapter_dir", [_put("adapter:adapter_config", ["lora_alpha"], v)]) for v in ("two", None)],
    ("max_lora_rank--1", "type", "adapter_dir", [_put("config", ["max_lora_rank"], -1)]),
    ("model-dev-null", "fs", "adapter_dir", [{"target": "model", "op": "devnull"}]),
    ("model-empty-object", "type", "adapter_dir", [{"target": "model", "op": "nest", "where": "root", "path": [], "value": {}}]),
    *[(f"yaml-nested-{d}", "nesting", "pool", [_nest_at("config", ["sink"], d, "dict", "block" if d <= 1000 else "flow")]) for d in (400, 500, 5000, 100_000)],
    *[(f"json-nested-{d}", "nesting", "pool", [_nest_at("model", [], d)]) for d in (400, 500, 5000, 100_000)],
    ("adapter-config-nested-500", "nesting", "adapter_dir", [_nest_at("adapter:adapter_config", ["target_modules"], 500)]),
    ("yaml-5000-digits", "sizes", "pool", [_put("config", ["max_lora_rank"], digits(5000))]),
    ("json-5000-digits", "sizes", "pool", [_put("model", ["hidden_size"], digits(5000))]),
    ("header-shape-5000-digits", "sizes", "adapter_dir", [{"target": "adapter:safetensors", "op": "st_shape", "shape": [digits(5000), 0], "relay": False, "rand": 0}]),
    ("added-tokens-5000-digits", "sizes", "adapter_dir", [_put("adapter:added_tokens", ["<|tool|>"], digits(5000))]),
    ("layer-id-5000-digits", "sizes", "adapter_dir", [{"target": "adapter:safetensors", "op": "st_layer_id", "layer": "9" * 5000, "rand": 0}]),
    ("lone-surrogate-dtype", "unicode", "adapter_dir", [_put("config", ["dtype"], "\ud800")]),
    ("lone-surrogate-target", "unicode", "adapter_dir", [_put("adapter:adapter_config", ["target_modules"], ["\ud800"])]),
    ("tp_size-10**20", "sizes", "adapter_dir", [_put("config", ["tp_size"], 10**20)]),
    ("tp_size-10**6", "sizes", "adapter_dir", [_put("config", ["tp_size"], 10**6)]),
    ("num_hidden_layers-2**31", "sizes", "adapter_dir", [_put("model", ["num_hidden_layers"], 2**31)]),
    *[(f"zero-byte-shape-{n}", "sizes", "adapter_dir", [{"target": "adapter:safetensors", "op": "st_shape", "shape": shape, "relay": True, "rand": 0}]) for n, shape in (("2**62,0,2**62", [2**62, 0, 2**62]), ("10**8,0,1", [10**8, 0, 1]))],
    ("many-legal-tensors", "sizes", "adapter_dir", [{"target": "adapter:safetensors", "op": "st_many_tensors", "count": 30_000, "zero": True, "rand": 0}]),
    # values sglang accepts and then fails on (tests/test_values_sglang_accepts_then_fails.py)
    ("n_routed_experts-0", "sizes", "adapter_dir", [_put("model", ["n_routed_experts"], 0)]),
    ("r-10**50", "sizes", "adapter_dir", [_put("adapter:adapter_config", ["r"], 10**50)]),
    ("lora_alpha-1e300", "sizes", "adapter_dir", [_put("adapter:adapter_config", ["lora_alpha"], 1e300)]),
    ("layer-id-10**100", "sizes", "adapter_dir", [{"target": "adapter:safetensors", "op": "st_layer_id", "layer": "1" + "0" * 100, "rand": 0}]),
    ("pinned-string-false", "type", "adapter_dir", [_put("config", ["lora_paths"], [{"lora_name": "a", "lora_path": "/adapters/a", "pinned": "false"}])]),
    # the same, one adapter of a fleet: a problem of that adapter, the others still checked
    *[(f"fleet-{name}", "fleet", "fleet", [dict(m, target=m["target"].replace("adapter:", "fleet/a1:"))]) for name, m in (
        ("r-sixteen", _put("adapter:adapter_config", ["r"], "sixteen")),
        ("nested-500", _nest_at("adapter:adapter_config", ["target_modules"], 500)),
        ("shape-5000-digits", {"target": "adapter:safetensors", "op": "st_shape", "shape": [digits(5000), 0], "relay": False, "rand": 0}),
        ("layer-id-5000-digits", {"target": "adapter:safetensors", "op": "st_layer_id", "layer": "9" * 5000, "rand": 0}),
        ("zero-byte-shape", {"target": "adapter:safetensors", "op": "st_shape", "shape": [2**62, 0, 2**62], "relay": True, "rand": 0}),
        ("surrogate", _put("adapter:adapter_config", ["target_modules"], ["\ud800"])),
    )],
]
