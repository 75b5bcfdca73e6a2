"""Analyses: pure functions over the columnar trace model, one module per concern (no I/O)."""
