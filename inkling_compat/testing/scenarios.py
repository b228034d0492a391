"""Named base scenarios and the merge that turns a rule example into `check()` arguments.

Rule examples only state what differs from a base scenario (`legacy` unless the example
says `base: v2` or `base: bare`), so each example reads as the fault it demonstrates.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml


@lru_cache(maxsize=1)
def base_scenarios() -> dict[str, dict[str, Any]]:
    text = resources.files("inkling_compat").joinpath("data/scenarios.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


def deep_merge(base: Any, override: Any) -> Any:
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = deep_merge(base.get(key), value) if key in base else copy.deepcopy(value)
        return merged
    return copy.deepcopy(override)


def example_arguments(example_input: dict[str, Any]) -> dict[str, Any]:
    """`check()` keyword arguments for an example: config, adapter, model, platform. `launch`
    (the words after `python -m sglang.launch_server`) is the server config as a launch command."""
    base = copy.deepcopy(base_scenarios()[example_input.get("base", "legacy")])
    out = {key: deep_merge(base.get(key) or {}, example_input.get(key) or {}) for key in ("config", "model", "platform")}
    if "launch" in example_input:
        from inkling_compat.inputs.launch import parse_launch

        out["config"] = parse_launch(["python", "-m", "sglang.launch_server", *map(str, example_input["launch"])])
    if "adapters" in example_input:
        out["adapter"] = copy.deepcopy(example_input["adapters"])
    elif "adapter" in example_input:
        given = example_input["adapter"]
        if given is None or base.get("adapter") is None or "pool" not in given:
            out["adapter"] = copy.deepcopy(given)
        else:
            out["adapter"] = deep_merge(base["adapter"], given)
    else:
        out["adapter"] = base.get("adapter")
    return out
