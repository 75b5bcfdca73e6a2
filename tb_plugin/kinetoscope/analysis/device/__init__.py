"""How does the busy device work? Its utilisation summary, Tensor Core use, HTA's counters and torch-tb-profiler's
step categories."""
