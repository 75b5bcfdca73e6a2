"""The command-line door: `kinetoscope report|index|diff|table` (`main.py`), one module per subcommand."""
import os

from ..trace.heap import hold_freed, one_arena

# Before numpy is imported: one OpenBLAS thread unless the user says otherwise. The analyses' one matrix product is
# a few rows by seven; OpenBLAS's own threads (one per core, started with numpy) would only spin, taking the CPU the
# decode threads need (issue 29: at 1.3 GB on 2 cores, 7% of the report's CPU time). The decoder child does the same.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# One malloc arena for every thread (the decode's and the analyses'): what one thread frees, the next allocates
# (trace/heap.py: a fifth less peak memory at 0.9 GB on 2 cores). The decoder child gets it by its environment.
one_arena()
# And what it frees, large blocks too, kept for its next allocations (trace/heap.py: half the page faults of a 4 GB
# report). The decoder child does the same.
hold_freed()
