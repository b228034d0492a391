"""An adapter's CEL context holds only the --lora-paths entries of its own name when the
adapter rules read the list only as `facts.lora_paths.exists(p, p.name == adapter.name ...)`
(engine/rule_compile.py `reads_lora_paths_by_name`): every report is the one the whole list gives."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from inkling_compat import api
from inkling_compat.engine import plan as plan_module
from inkling_compat.engine.rule_load import load_rules

ADAPTER = Path(__file__).resolve().parent.parent / "examples" / "adapter"
MODEL = Path(__file__).resolve().parent.parent / "examples" / "model"


def test_the_shipped_adapter_rules_read_entries_by_name():
    assert plan_module.reads_lora_paths_by_name(tuple(c for c in load_rules() if c.rule.scope == "adapter"))


def _report(argv, monkeypatch, by_name):
    """The report with each plan's `lora_paths_by_name` set to `by_name` for its contexts."""
    from inkling_compat.engine import context

    original = context.Contexts.__init__

    def init(self, inputs, facts, plan, build=None):
        kept = plan.lora_paths_by_name
        plan.lora_paths_by_name = by_name
        try:
            original(self, inputs, facts, plan, build)
        finally:
            plan.lora_paths_by_name = kept

    monkeypatch.setattr(context.Contexts, "__init__", init)
    try:
        return api.check(argv=argv)
    finally:
        monkeypatch.setattr(context.Contexts, "__init__", original)


@pytest.mark.parametrize("dp", [False, True])
def test_entries_by_name_give_the_whole_lists_report(tmp_path, monkeypatch, dp):
    for i in range(6):
        os.symlink(ADAPTER, tmp_path / f"a{i}")
    entries = [f"a0={tmp_path}/a0", json.dumps({"lora_name": "a1", "lora_path": f"{tmp_path}/a1", "pinned": True}), f"a2={tmp_path}/a2",
               json.dumps({"lora_name": "a3", "lora_path": f"{tmp_path}/a3", "pinned": False}), f"a4={tmp_path}/a4", f"a5={tmp_path}/a0"]
    argv = ["python3", "-m", "sglang.launch_server", "--model-path", str(MODEL), "--enable-lora", "--lora-paths", *entries]
    if dp:
        argv += ["--tp", "2", "--dp", "2", "--enable-dp-attention"]
    whole = _report(argv, monkeypatch, False)
    own = _report(argv, monkeypatch, True)
    assert [(p.rule_id, p.message) for p in own.problems] == [(p.rule_id, p.message) for p in whole.problems]
    assert own.rules_evaluated == whole.rules_evaluated
    if dp:  # the unpinned adapters are named, the pinned one is not
        named = {p.message.split(":")[0] for p in own.problems if p.rule_id == "adapter-dp-attention-unpinned"}
        assert "Failed to load LoRA adapter a1" not in named and "Failed to load LoRA adapter a0" in named
