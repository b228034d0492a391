"""Running a differential property on a share of the examples `make fuzz` asks for.

`test_fidelity.run_property` runs INKLING_COMPAT_FIDELITY_EXAMPLES examples when that is set
(`make fuzz`: 100,000 over the jobs), else its default. The properties added after lora.py's
cost more per case (the pool property runs the whole load on every TP rank, twice), so at fuzz
size they run `share` of that number; the normal run keeps each property's own default.
"""

from __future__ import annotations

from typing import Any, Callable

import test_fidelity


def run_property(prop: str, strategy: Any, compare: Callable[[Any], None], default_examples: int, share: float = 1.0) -> None:
    asked = test_fidelity.EXAMPLES
    test_fidelity.EXAMPLES = max(1, int(asked * share)) if asked else 0
    try:
        test_fidelity.run_property(prop, strategy, compare, default_examples)
    finally:
        test_fidelity.EXAMPLES = asked
