"""Facts: what sglang would decide from the inputs, derived once, read by the rules."""
