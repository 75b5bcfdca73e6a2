"""What bounds this trace, and can it tell? The verdict, whether the trace can support one, its evidence, insights and trace health."""
