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


def run() -> None:
    """The `kinetoscope` command (setup.py's console script, `python -m kinetoscope.cli`): its modules imported with
    the cyclic collector paused, then `main.run`. Importing them builds some 150,000 objects, none of them garbage;
    the 70 collections they set off cost 12 ms of the command's 0.2 s start (x10 ResNet report: 0.207 -> 0.195 s for
    the imports, medians of 10). They are then frozen (`gc.freeze`): left in the young generation, the first
    collections after the imports walked all of them again (11 ms of the x10 report's 12 collections; 0.8 ms
    frozen). The collector runs as usual from the first line of `main` on."""
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        from .main import run as command
    finally:
        gc.freeze()  # the modules' objects live as long as the process: no collection ever walks them again
        if was_enabled:
            gc.enable()
    command()
