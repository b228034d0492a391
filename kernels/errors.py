"""Errors of the runtime that must be importable without torch or triton."""

from __future__ import annotations


class RuntimeUnavailable(ImportError):
    """torch, triton (or safetensors) is not installed, or cannot run here. One line for users."""
