"""Input formats: pydantic models, file loading, PEFT adapter directories."""
