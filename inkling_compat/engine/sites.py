"""Which rules' sglang sites exist in a release other than the default one.

inkling_compat/data/sglang-sites.json is generated from the sglang wheels by the raise-site audit
(`python tests/oracle/audit.py --write-data`): per rule and release, the line of the rule's site
there, its message or condition where they changed, or null where the release lacks the site (the
code the rule is about is not in it: triton_v2, the lora_* MoE runners, the V2 sink, lora/moe/ are
not in 0.5.22). A rule whose site a release lacks is not evaluated for that release.

Read only when a release other than the default is checked: a check of the default release never
opens the file.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from inkling_compat.inputs.package_files import package_folder

SITES_FILE = "sglang-sites.json"


@functools.lru_cache(maxsize=1)
def data() -> dict[str, Any]:
    return json.loads((package_folder() / "data" / SITES_FILE).read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=16)
def absent(version: str) -> frozenset[str]:
    """The ids of the rules whose site `version` lacks (empty for a release the data does not list)."""
    found = data()
    if version not in found["releases"]:
        return frozenset()
    return frozenset(rule for rule, releases in found["rules"].items() if version in releases and releases[version] is None)

