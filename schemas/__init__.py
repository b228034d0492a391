"""JSON Schemas of the input formats and the rule file, generated from the pydantic models."""
