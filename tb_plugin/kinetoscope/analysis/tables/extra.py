"""The tables torch-tb-profiler and HTA have beyond the op, kernel and module tables, as plain rows (times in µs):
the module tree, memory per op, the user-annotation breakdown and the frequent kernel sequences. What
`kinetoscope table --by module-tree|memory|annotation|sequences`, the `tables` route and the Tables panel show.

    rows, totals = extra_rows(model, index, "memory", window=None)
    rows, totals = extra_rows(model, index, "annotation", side="cpu", scope="top")
    rows, totals = extra_rows(model, index, "sequences", min_len=3, max_len=8, top=20)

Names are the model's shown names (cut to 1,000 characters); every list is bounded (module tree: MAX_NODES
nodes; sequences: at most MAX_TOP of at most MAX_LEN kernels).
"""
from __future__ import annotations

from typing import Any

from ...trace.kinds import Kind
from ...trace.model import TraceModel
from ..core.selectors import NO_OP
from .annotations import annotation_table
from .index import TableIndex, Window, clip
from .kernel_sequences import kernel_sequences, op_patterns
from .module_tree import module_label, module_tree
from .op_memory import op_memory_table

EXTRA_KINDS = ("module_tree", "memory", "annotation", "sequences")


def extra_rows(model: TraceModel, index: TableIndex, by: str, window: Window = None, *, side: str = "gpu",
               scope: str = "all", min_len: int = 3, max_len: int = 8, top: int = 20,
               root: str = "") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows and totals of one of EXTRA_KINDS; see each builder.

    Raises:
        ValueError: an unknown kind, or a bad annotation side/scope or sequence length.
    """
    if by == "module_tree":
        return module_tree_rows(model, index, window)
    if by == "memory":
        return memory_rows(model, index, window)
    if by == "annotation":
        return annotation_rows(model, side, scope, window)
    if by == "sequences":
        if root:
            return pattern_rows(model, index, root, window, min_len, top)
        return sequence_rows(model, index, window, min_len, max_len, top)
    raise ValueError(f"unknown table {by!r} (one of {', '.join(EXTRA_KINDS)})")


def module_tree_rows(model: TraceModel, index: TableIndex, window: Window = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The module tree in preorder: `name` (without `nn.Module: `), `index` (the row's place in preorder),
    `parent` (-1 for a root), `depth`, `occurrences`, `operators`, `host_us`, `self_host_us`, `device_us`,
    `self_device_us`, and where the trace replays graphs `replayed_device_us` (the node's device time graph replays
    ran, attributed from the reference); totals: `rows`, `truncated`, and `host_us`, `device_us` of the roots, and
    with replays `replayed_device_us` of the roots and `attributed_from` (the reference)."""
    tree = module_tree(model, index, window)
    names = [module_label(model.shown_names[i]) for i in tree.name_id.tolist()]
    kinds = ("host", "self_host", "device", "self_device") + (("replayed_device",) if index.graphs is not None else ())
    columns = {"parent": tree.parent.tolist(), "depth": tree.depth.tolist(), "occurrences": tree.occurrences.tolist(),
               "operators": tree.operators.tolist(), **{f"{k}_us": (getattr(tree, f"{k}_ns") / 1e3).tolist() for k in kinds}}
    rows = [{"name": name, "index": i, **{k: v[i] for k, v in columns.items()}} for i, name in enumerate(names)]
    roots = tree.parent < 0
    totals = {"rows": len(rows), "truncated": tree.truncated, "host_us": float(tree.host_ns[roots].sum()) / 1e3,
              "device_us": float(tree.device_ns[roots].sum()) / 1e3}
    if index.graphs is not None:
        totals |= {"replayed_device_us": float(tree.replayed_device_ns[roots].sum()) / 1e3,
                   "attributed_from": index.graphs.reference}
    return rows, totals


MEMORY_FIELDS = ("calls", "self_alloc_count", "self_alloc_bytes", "self_freed_bytes", "self_increase_bytes",
                 "alloc_count", "alloc_bytes", "freed_bytes", "increase_bytes", "peak_increase_bytes")


def memory_rows(model: TraceModel, index: TableIndex, window: Window = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Memory per (op, device): `name`, `device` (`CPU`, `GPU0`...) and MEMORY_FIELDS (see `op_memory`);
    totals: `rows`, `devices`, `counted_events`, `unowned_events`."""
    table = op_memory_table(model, index, window)
    columns = {k: getattr(table, k).tolist() for k in MEMORY_FIELDS}
    rows = [{"name": model.shown_names[n], "device": table.devices[d], **{k: v[i] for k, v in columns.items()}}
            for i, (n, d) in enumerate(zip(table.name_id.tolist(), table.device.tolist()))]
    return rows, {"rows": len(rows), "devices": list(table.devices), "counted_events": table.counted_events,
                  "unowned_events": table.unowned_events}


def annotation_rows(model: TraceModel, side: str = "gpu", scope: str = "all",
                    window: Window = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """HTA's user-annotation breakdown: `name`, `count`, `total_us`, `mean_us`, `min_us`, `max_us`, `std_us`,
    `share` (of the side's annotated time in this table); totals: `rows`, `side`, `scope`, `total_us`."""
    table = annotation_table(model, side, scope, window)
    total = int(table.total_ns.sum())
    rows = [{"name": model.shown_names[n], "count": c, "total_us": t / 1e3, "mean_us": mu / 1e3, "min_us": lo / 1e3,
             "max_us": hi / 1e3, "std_us": sd / 1e3, "share": round(t / total, 6) if total else 0.0}
            for n, c, t, mu, lo, hi, sd in zip(*(a.tolist() for a in (table.name_id, table.count, table.total_ns,
                                                                      table.mean_ns, table.min_ns, table.max_ns, table.std_ns)))]
    return rows, {"rows": len(rows), "side": side, "scope": scope, "total_us": total / 1e3}


def sequence_rows(model: TraceModel, index: TableIndex, window: Window = None, min_len: int = 3, max_len: int = 8,
                  top: int = 20) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The most frequent kernel sequences: `name` (the kernel names joined by ` → `, cut), `kernels` (the
    names), `length`, `occurrences`, `total_us` (kernel time covered), `mean_us` (per occurrence), `share` (of
    all kernel time), `launched_by` (`[{"name", "occurrences"}]`: the ops that launched the first kernel);
    totals: `rows`, `kernel_us`, `min_len`, `max_len`."""
    seqs = kernel_sequences(model, index, min_len, max_len, top, window)
    kernel_ns = _kernel_ns(model, index, window)
    rows = []
    for s in seqs:
        names = [model.shown_names[i][:200] for i in s.name_ids]
        rows.append({"name": " \u2192 ".join(n[:60] for n in names), "kernels": names, "length": len(names),
                     "occurrences": s.occurrences, "total_us": s.total_ns / 1e3, "mean_us": s.mean_ns / 1e3,
                     "share": round(s.total_ns / kernel_ns, 6) if kernel_ns else 0.0,
                     "launched_by": [{"name": model.shown_names[o] if o >= 0 else NO_OP, "occurrences": c}
                                     for o, c in s.launched_by]})
    return rows, {"rows": len(rows), "kernel_us": kernel_ns / 1e3, "min_len": min_len, "max_len": max_len}


def pattern_rows(model: TraceModel, index: TableIndex, root: str, window: Window = None, min_len: int = 3,
                 top: int = 20) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """HTA's op-rooted patterns (`kernel_sequences.op_patterns`): rows as `sequence_rows`' (`occurrences` the
    calls, `total_us` the activities' time summed over them) plus `op` and `cpu_us` (the calls' time);
    totals add `root`."""
    patterns = op_patterns(model, index, root, min_len, top, window)
    kernel_ns = _kernel_ns(model, index, window)
    rows = []
    for p in patterns:
        op, names = model.shown_names[p.op_name_id], [model.shown_names[i][:200] for i in p.name_ids]
        rows.append({"name": " \u2192 ".join(n[:60] for n in [op, *names]), "op": op, "kernels": names,
                     "length": len(names), "occurrences": p.count, "total_us": p.gpu_ns / 1e3,
                     "mean_us": p.gpu_ns / p.count / 1e3, "cpu_us": p.cpu_ns / 1e3,
                     "share": round(p.gpu_ns / kernel_ns, 6) if kernel_ns else 0.0,
                     "launched_by": [{"name": op, "occurrences": p.count}]})
    return rows, {"rows": len(rows), "kernel_us": kernel_ns / 1e3, "min_len": min_len, "root": root}


def _kernel_ns(model: TraceModel, index: TableIndex, window: Window) -> int:
    """Kernel time (not memcpy/memset) in the window."""
    inside, dur = clip(index.act_start_ns, index.act_end_ns, window)
    kernel = model.kind[index.act_rows] == Kind.KERNEL
    return int(dur[kernel & inside].sum())
