"""The primitives every analysis stands on: row selectors, nesting of ops, the op forest, CPU self time and the thresholds."""
