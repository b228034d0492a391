"""Shape-level replays of sglang 0.5.23's own functions, one module per family."""
