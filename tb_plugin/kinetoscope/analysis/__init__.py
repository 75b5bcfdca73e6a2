"""Analyses: pure functions over the columnar trace model (no I/O), one package per question (README.md beside this file)."""
