"""The public entry points: `check(...) -> Report`, and `evaluate(...) -> Checked` for callers
that also need the loaded inputs and the derived facts (the runtime)."""

from inkling_compat.engine.evaluate import Checked, check, evaluate
from inkling_compat.facts.inputs import Inputs

__all__ = ["check", "evaluate", "Checked", "Inputs"]
