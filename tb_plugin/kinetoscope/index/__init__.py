"""`kinetoscope index`: per-trace sidecars holding the decoded model, the analyses and the rank digest, so a
team opens a logdir without decoding it again (`sidecar.py`), written by a local process pool or a Dask
cluster (`runner.py`, per-trace work in `tasks.py`)."""
