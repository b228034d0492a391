"""The reference runtime: pool building on tensors, load(), the run command."""
