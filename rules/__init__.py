"""Rule files (one YAML per documented sglang error); shipped as package data."""
