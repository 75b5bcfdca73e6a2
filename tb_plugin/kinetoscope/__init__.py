"""Kinetoscope: a TensorBoard plugin that explains why the GPU sits idle in PyTorch profiler traces."""

__version__ = "0.1.0"
