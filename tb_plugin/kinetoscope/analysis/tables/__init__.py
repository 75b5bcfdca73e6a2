"""Which ops and kernels take the time? The profiler tables: ops, kernels, modules, annotations, kernel sequences,
memory per op, and name search."""
