"""The public entry point: `check(config, adapter, model=..., platform=...) -> Report`."""

from inkling_compat.engine.evaluate import check

__all__ = ["check"]
