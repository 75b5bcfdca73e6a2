"""Pure view computations for the HTTP layer: level-of-detail lanes, Chrome-trace export, histograms."""
