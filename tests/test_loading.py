"""The input loader's YAML path (libyaml composer + node-graph caps) reads what PyYAML's safe
loader reads, refuses alias bombs and over-deep documents, and keeps the nodes' marks."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from inkling_compat.errors import InputError
from inkling_compat.inputs import loading, yaml_read
from inkling_compat.inputs.loading import MAX_EXPANDED_NODES, MAX_YAML_ALIASES, load_model_config, load_server_config, read_document
from inkling_compat.inputs.yaml_read import graph_counts, load_yaml

ROOT = Path(__file__).resolve().parent.parent

TRICKY = [
    "a: 0x1f\nb: 1_000\nc: .inf\nd: yes\ne: ~\nf: 0o17\ng: 012\nh: +12\ni: -0\nj: 1.5e3\nk: '012'\nl: .NaN\n",
    "when: 2024-01-01\nstamp: 2024-01-01 10:00:00\n",  # timestamps: the general constructor
    "base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\n",  # merge keys
    "a: &x 5\nb: *x\nc: [*x, *x]\n",  # scalar aliases
    "shared: &s [1, 2]\nboth: [*s, *s]\n",
    "? [1, 2]\n: complex key\n",  # unhashable key: a YAMLError, as in PyYAML
    "x: !!set {a, b}\ny: !!binary aGk=\nz: !!str 12\nw: !!float 3\n",
    "- [1, 2, {a: b}]\n- null\n- True\n- 'quoted: text'\n- \"esc\\ttab\"\n",
    "",
    "# only a comment\n",
    "just a string\n",
    "a: b: c\n",  # malformed
    "k: [1, 2\n",  # malformed
    "list:\n- a\n- b:\n    c: [1, {d: e}]\n",
]


def _outcome(loader_call):
    try:
        return ("ok", repr(loader_call()))
    except yaml.YAMLError as exc:
        return ("error", type(exc).__name__)


def _corpus() -> list[str]:
    files = sorted(ROOT.glob("rules/**/*.yaml")) + sorted(ROOT.glob("examples/**/*.yaml")) + sorted(ROOT.glob("inkling_compat/data/*.yaml"))
    return TRICKY + [p.read_text(encoding="utf-8") for p in files]


@pytest.mark.parametrize("index", range(len(_corpus())))
def test_load_yaml_reads_what_safe_load_reads(index):
    text = _corpus()[index]
    assert _outcome(lambda: load_yaml(text)[0]) == _outcome(lambda: yaml.load(text, Loader=yaml.SafeLoader))


# What the one-walk path of the reader (yaml_read.parse_yaml) must treat as the full path does:
# keys that construct equal, float keys, escapes of lone surrogates, ints past the digit limit
# written short (hex), nesting at the limit, and the ordinary documents above.
ONE_WALK = TRICKY + [
    "1: a\nTrue: b\n",  # 1 == True: a duplicate
    ".nan: a\n.nan: b\n",  # two NaN keys: a duplicate no dict sees
    "1.5: a\n",
    "a: \"\\ud800\"\n",  # a lone surrogate
    "a: 0x" + "f" * 120 + "\n",  # short text, an int over the limit
    "a: " + "9" * 101 + "\n",
    "a: " + "[" * 70 + "]" * 70 + "\n",  # deeper than the limit
    "a: " + "[" * 60 + "]" * 60 + "\n",
    "a: 1\na: 2\n",
    "x: 00\ny: 0\nz: 007\nw: 1_0\nv: 12:30\n",  # octal, base 60
]


def _read_outcome(call):
    try:
        return ("ok", repr(call()))
    except (yaml.YAMLError, loading.LimitExceeded) as exc:
        return ("error", type(exc).__name__, str(exc))


@pytest.mark.parametrize("index", range(len(ONE_WALK)))
def test_the_one_walk_reader_reads_what_the_full_path_reads(index):
    """`_parse_yaml` takes the one-walk path for plain documents and falls back to the full
    path (duplicate keys, data, limits) for anything else: same data, same errors."""
    text = ONE_WALK[index]

    def full():
        data, _ = load_yaml(text, loading.MAX_DEPTH)
        loading.check_data(data, count_limit=2 * MAX_EXPANDED_NODES)
        return data

    assert _read_outcome(lambda: yaml_read.parse_yaml(text)) == _read_outcome(full)


def test_aliases_are_counted_on_the_node_graph():
    root = load_yaml("a: &x [1, 2]\nb: *x\nc: [*x, *x]\nd: &y 3\ne: *y\n")[1]
    aliases, size = graph_counts(root)
    assert aliases == 4
    # root 1 + 5 keys + a (3) + b (3) + c (1 + 3 + 3) + d 1 + e 1 = 21 values once expanded
    assert size == 21


def test_recursive_alias_reads_like_safe_load():
    data, root = load_yaml("a: &a [1, *a]\n")
    assert data["a"][1] is data["a"]
    assert graph_counts(root)[0] == 1


def test_alias_cap(tmp_path):
    doc = tmp_path / "many.yaml"
    doc.write_text("x: &x 1\nl: [" + ", ".join(["*x"] * (MAX_YAML_ALIASES + 1)) + "]\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_document(doc)
    assert "many.yaml" in str(info.value) and "aliases" in str(info.value)
    doc.write_text("x: &x 1\nl: [" + ", ".join(["*x"] * MAX_YAML_ALIASES) + "]\n", encoding="utf-8")
    assert len(read_document(doc)["l"]) == MAX_YAML_ALIASES


def test_expanded_size_cap_without_expanding(tmp_path):
    # 40 aliases, 10**7 values once expanded: refused from the node graph, never built.
    lines = ['l0: &l0 ["a","a","a","a","a","a","a","a","a","a"]']
    lines += [f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 4) + "]" for i in range(1, 11)]
    doc = tmp_path / "bomb.yaml"
    doc.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_document(doc)
    assert info.value.field == "(yaml)" and f"more than {MAX_EXPANDED_NODES} values" in str(info.value)


def test_plain_tree_over_the_cap_is_refused(tmp_path):
    doc = tmp_path / "big.yaml"
    doc.write_text("l: [" + ",".join(["1"] * (MAX_EXPANDED_NODES + 5)) + "]\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_document(doc)
    assert info.value.field == "(yaml)"


def test_json_value_cap_still_applies(tmp_path):
    doc = tmp_path / "big.json"
    doc.write_text('{"l": [' + ",".join(["1"] * (MAX_EXPANDED_NODES + 5)) + "]}", encoding="utf-8")
    with pytest.raises(InputError):
        read_document(doc)


def test_deep_nesting_is_read_or_refused_with_a_line(tmp_path):
    deep = "a: " + "[" * 900 + "]" * 900 + "\n"  # deeper than Python's recursion allows us here
    assert load_yaml(deep)[0]["a"] == _nested(900)
    doc = tmp_path / "deeper.yaml"
    doc.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_document(doc)
    assert "deeper.yaml" in str(info.value) and "malformed YAML" in str(info.value)


def _nested(depth: int) -> list:
    out: list = []
    for _ in range(depth - 1):
        out = [out]
    return out


def test_nodes_keep_their_marks():
    data, root = load_yaml("name: x\npool:\n  gate_up_lora_a: {shape: [4, 1]}\n")
    assert data == {"name": "x", "pool": {"gate_up_lora_a": {"shape": [4, 1]}}}
    pool_key, pool_value = root.value[1]
    assert pool_key.value == "pool" and pool_key.start_mark.line == 1
    assert pool_value.value[0][0].start_mark.line == 2 and pool_value.value[0][0].start_mark.column == 2


def test_unknown_keys_still_suggest(tmp_path):
    doc = tmp_path / "serve.yaml"
    doc.write_text("enable_lora: true\nmax_lora_rnak: 16\nenv:\n  SGLANG_OPT_LINEARIZED_SHARED_SNK: true\n", encoding="utf-8")
    _, found = loading.load_server_config(doc)
    assert {(f["key"], f["suggestion"]) for f in found} == {
        ("max_lora_rnak", "max_lora_rank"),
        ("env.SGLANG_OPT_LINEARIZED_SHARED_SNK", "env.SGLANG_OPT_LINEARIZED_SHARED_SINK"),
    }
    assert all(f["file"] == str(doc) for f in found)


# --- duplicate keys: an input error naming both lines (YAML and JSON keep the last silently) ---


@pytest.mark.parametrize(
    "text, field, lines",
    [
        ("enable_lora: true\nmax_lora_rank: 16\nlora_backend: triton\nmax_lora_rank: 64\n", "max_lora_rank", (2, 4)),
        ("sink:\n  sink_class: legacy\n  sink_class: v2\n", "sink.sink_class", (2, 3)),
        ("lora_paths:\n  - {lora_name: a, lora_path: /a, lora_name: b}\n", "lora_paths[0].lora_name", (2, 2)),
        ("enable_lora: true\n'enable_lora': false\n", "enable_lora", (1, 2)),
        ("{max_lora_rank: 1, max_lora_rank: 2, lora_backend: triton}\n", "max_lora_rank", (1, 1)),
    ],
    ids=["top-level", "nested", "in-a-list", "quoted-twin", "flow"],
)
def test_yaml_duplicate_key_is_an_input_error_naming_both_lines(tmp_path, text, field, lines):
    path = tmp_path / "serve.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        load_server_config(str(path))
    assert info.value.file == str(path) and info.value.field == field
    assert f"duplicate key '{field.rsplit('.', 1)[-1].split('[')[0]}' (lines {lines[0]} and {lines[1]})" in info.value.reason


def test_json_duplicate_key_names_both_lines(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{\n  "hidden_size": 1536,\n  "quantization_config": {\n    "quant_algo": "NVFP4",\n    "quant_algo": "FP8"\n  }\n}\n')
    with pytest.raises(InputError) as info:
        load_model_config(str(path))
    assert (info.value.field, info.value.reason) == ("quantization_config.quant_algo", "duplicate key 'quant_algo' (lines 4 and 5): say it once")


@pytest.mark.parametrize(
    "text",
    [
        "a: {x: 1}\nb: {x: 2}\n",  # the same key in two mappings
        "base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  x: 3\n",  # a merge key, then an override
        "a: &n {x: 1}\nb: *n\n",  # one mapping reached twice through an alias
        "1: one\n'1': also one\n",  # an int key and a string key
    ],
    ids=["two-mappings", "merge-override", "alias", "int-and-str"],
)
def test_not_duplicates(text):
    data, _ = load_yaml(text)
    assert data == yaml.safe_load(text)


def test_a_misspelt_required_key_in_a_manifest_says_did_you_mean(tmp_path):
    path = tmp_path / "adapter_pool.yaml"
    path.write_text(
        "name: x\npool:\n  gate_up_lora_a: {shap: [4, 1, 32, 1536]}\n  gate_up_lora_b: {shape: [4, 2, 1536, 16]}\n"
        "  down_lora_a: {shape: [4, 2, 16, 768]}\n  down_lora_b: {shape: [4, 1, 1536, 16]}\n"
    )
    with pytest.raises(InputError) as info:
        loading.load_adapter(str(path))
    assert info.value.field == "pool.gate_up_lora_a.shape"
    assert info.value.reason == "Field required ('shap' is there: did you mean 'shape'?)"


def test_a_document_off_the_one_walk_path_is_composed_once(monkeypatch):
    """The fallback reuses the nodes: composing a large document twice cost 1.3x the time and
    1.5x the memory (9 MB of list items: 8.4 s and 1.27 GB against 5.0 s and 0.82 GB)."""
    if not yaml_read._LIBYAML:
        pytest.skip("the one-walk path needs libyaml")
    calls = []
    real = yaml_read.compose
    monkeypatch.setattr(yaml_read, "compose", lambda text: calls.append(1) or real(text))
    assert yaml_read.parse_yaml("base: &b {x: 1}\nderived:\n  <<: *b\n") == {"base": {"x": 1}, "derived": {"x": 1}}
    assert len(calls) == 1
