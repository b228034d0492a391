"""The rule engine: rule file schema, loading, CEL, evaluation."""
