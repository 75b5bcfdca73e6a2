"""What changed between two runs, and does it break a rule? The comparison of two sides and the CI gate on it."""
