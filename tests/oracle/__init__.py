"""Test-only oracles built from the reference implementation (never shipped, never copied)."""
