"""Kineto trace files -> columnar model: discovery, storage, decoding, building, caching."""
