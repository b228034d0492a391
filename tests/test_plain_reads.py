"""engine/plain_reads.py: a plain form read from a context's variables gives CEL's own result
wherever it decides, on values of every type (and decides the common cases)."""

from __future__ import annotations

import marshal

import pytest

from inkling_compat.engine import cel, plain_reads
from inkling_compat.engine.context import cel_context

VALUES = {
    "nothing": None, "yes": True, "no": False, "zero": 0, "three": 3, "minus": -3, "big": 2**63 - 1, "low": -(2**63) + 1,
    "half": 1.5, "three_f": 3.0, "nan": float("nan"), "empty": "", "x": "x", "x_sp": "x ", "unicode": "é✓", "null_text": "null",
    "list": [1], "no_list": [], "map": {"k": 1}, "no_map": {}, "nested": {"deep": {"flag": True, "name": "peft", "none": None}},
}  # fmt: skip
LITERALS = ["null", "true", "false", "0", "3", "-3", "9223372036854775807", '""', '"x"', '"x "', '"é✓"', '"null"', '"peft"']
PATHS = [f"v.{name}" for name in VALUES] + ["v.nested.deep.flag", "v.nested.deep.name", "v.nested.deep.none", "v.nested.deep.missing",
                                             "v.missing", "v.map.k", "v.list.k", "v.nothing.k", "v.x.k", "w.anything"]  # fmt: skip
FORMS = [p for p in PATHS] + [f"!{p}" for p in PATHS] + [f"{p} {op} {lit}" for p in PATHS for op in ("==", "!=") for lit in LITERALS]


def _cel(text, ctx):
    try:
        return cel.compile(text).execute(ctx)
    except Exception as exc:  # noqa: BLE001 - an error: what the form must leave undecided
        return exc


def test_every_plain_form_reads_as_cel_where_it_decides():
    variables = {"v": VALUES}
    ctx = cel_context(variables)
    copy = marshal.loads(marshal.dumps(variables))  # (what a kept context gives back)
    decided = 0
    for text in FORMS:
        form = plain_reads.form(text)
        assert form is not None, text
        got = form.read(copy)
        if got is plain_reads.UNDECIDED:
            continue
        decided += 1
        assert got is _cel(text, ctx), text
    assert decided > len(FORMS) // 2


@pytest.mark.parametrize(
    "text",
    ['v.x == "a\\"b"', "v.x == 'x'", 'v.x == r"x"', "v.three == 3u", "v.half == 1.5", "v.three == 0x3", "v.three == 03",
     "!v.yes == true", "!!v.yes", "v", "x == null", "v.x.size() > 0", "v.x == null // comment", "v.in == null", "null.x == null",
     "v.three == -9223372036854775808", "v.three == 99999999999999999999", "v.a && v.b", "v[0] == null"],
)  # fmt: skip
def test_anything_else_is_left_to_cel(text):
    assert plain_reads.form(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [("facts.lora_enabled", True), ("!config.lora_strict_loading", True), ("config.max_lora_rank != null", False),
     ('adapter.form == "peft"', True), ("config.max_lora_rank == 0", False), ("config.tp_size == 1", True),
     ("config . tp_size\n== 1", True), ("adapter.source != null", plain_reads.UNDECIDED)],
)  # fmt: skip
def test_the_forms_rules_write(text, expected):
    variables = {"facts": {"lora_enabled": True}, "config": {"lora_strict_loading": False, "max_lora_rank": None, "tp_size": 1},
                 "adapter": {"form": "peft", "source": (1,)}}  # fmt: skip
    form = plain_reads.form(text)
    assert form is not None and form.read(variables) is expected
