"""Loading an oracle in a test: skip without the sglang wheel, fail under
INKLING_COMPAT_REQUIRE_ORACLE=1 (as tests/conftest.py's `sglang_oracle` fixture does)."""

from __future__ import annotations

import os
from typing import Any, Callable

import pytest

from oracle import sglang_sink


def load_or_skip(loader: Callable[[], Any], what: str) -> Any:
    try:
        return loader()
    except (sglang_sink.WheelUnavailable, OSError, KeyError, ImportError) as exc:
        reason = f"sglang {sglang_sink.SGLANG_VERSION} {what} oracle unavailable: {exc}"
        if os.environ.get("INKLING_COMPAT_REQUIRE_ORACLE") == "1":
            pytest.fail(reason + " (INKLING_COMPAT_REQUIRE_ORACLE=1)", pytrace=False)
        pytest.skip(reason)
