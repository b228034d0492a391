"""The public entry points: `check(...) -> Report`, and `evaluate(...) -> Checked` for callers
that also need the loaded inputs and the derived facts (the runtime)."""

from inkling_compat.engine.evaluate import Checked, Inputs, check, evaluate

__all__ = ["check", "evaluate", "Checked", "Inputs"]
