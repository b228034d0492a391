"""Generated artefacts: the rule catalogue, JSON schemas."""
