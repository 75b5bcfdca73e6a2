"""Renderers of a comparison (`analysis.compare.compare_sides`) and its gate results, as text or as
markdown made for a pull-request comment: a headline, the ranked changes, a summary table, the verdicts,
and the joined tables folded away."""
from __future__ import annotations

from typing import Any, Optional

from ..analysis.judgement.verdict import NOT_ENOUGH_DATA
from .units import human_bytes, human_us, table_lines

SUMMARY_METRICS = ("step_time", "step_time_p90", "step_time_mean", "compute", "comm", "exposed_comm", "idle", "idle_dataloader",
                   "idle_host", "idle_sync", "idle_launch", "idle_comm", "idle_graph", "idle_unlinked", "outside",
                   "dataloader_wait", "launch_p50", "launch_p99", "memory_peak")
TABLE_ROWS = 15  # kernel and op rows shown (the JSON has MAX_TABLE_ROWS)


def figure(value: Optional[float], unit: str, signed: bool = False) -> str:
    """A figure in its unit ('-' when missing); `signed` adds '+' to a positive change."""
    if value is None:
        return "-"
    text = human_bytes(value) if unit == "bytes" else human_us(value)
    return ("+" + text) if signed and value > 0 else text.replace("-", "−") if signed else text


def pct(value: Optional[float]) -> str:
    if value is None:
        return "-"
    return f"{value:+.1f}%".replace("-", "−")


def headline(result: dict[str, Any]) -> str:
    """One line: the median step time, its change and whether it is beyond noise."""
    m = _metric(result, "step_time")
    if m["delta"] is None:
        return "step time: not measured"
    noise = f", noise ±{figure(m['noise'], 'us')}" if m["noise"] is not None else ""
    return (f"step time (median) {figure(m['base'], 'us')} → {figure(m['cand'], 'us')}: {figure(m['delta'], 'us', True)} "
            f"({pct(m['delta_pct'])}), {m['status']}{noise}")


def _metric(result: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in result["metrics"] if m["name"] == name)


def render(result: dict[str, Any], gate: Optional[list[dict[str, Any]]] = None, markdown: bool = False) -> str:
    """The comparison (and the gate's outcome, when rules were given) as text or markdown."""
    b, c = result["base"], result["cand"]
    title = f"Kinetoscope diff: {b['label']} → {c['label']}"
    lines = [f"## {title}" if markdown else f"== {title} =="]
    head = headline(result)
    lines += [f"**{head[0].upper() + head[1:]}**" if markdown else head[0].upper() + head[1:], ""]
    steps = result["steps"]
    lines.append(f"{steps['matched']} steps matched by position ({steps['base']} in the baseline, {steps['cand']} in the "
                 f"candidate; {b['traces']} and {c['traces']} traces)")
    lines += [f"Note: {w}" for w in result.get("warnings") or []]
    lines += _verdicts(result["verdict"], markdown)
    if result.get("stragglers"):
        lines.append(_stragglers(result["stragglers"]))
    if gate:
        lines += _gate(gate, markdown)
    lines += _changes(result["changes"], markdown)
    lines += _summary(result, markdown)
    lines += _ranks(result.get("ranks") or [], markdown)
    for key, what in (("kernels", "Kernels"), ("ops", "CPU ops")):
        if result.get(key):
            lines += _joined(result[key], what, markdown)
    for side, entry in (("baseline", b), ("candidate", c)):
        for failure in entry["failed"]:
            lines.append(f"Not loaded ({side}): {failure}")
    return "\n".join(lines + [""])


def _stragglers(s: dict[str, Any]) -> str:
    def one(found):
        if found is None:
            return "not known"
        return ", ".join(f"rank {x['rank']} (made the others wait {human_us(x['caused_wait_us'])})" for x in found) or "none"
    return f"Stragglers: {one(s['base'])} → {one(s['cand'])}"


def _verdicts(v: dict[str, Any], markdown: bool) -> list[str]:
    def one(x):
        share = f", {100 * x['share']:.0f}%" if x.get("share") is not None else ""
        runner = f"; runner-up {x['runner_up']}" if x.get("runner_up") else ""
        if x["bound"] == NOT_ENOUGH_DATA:  # no confidence: what the figures lean to, if anything
            return f"{x['bound']}" + (f" (the figures lean to {x['runner_up']})" if x.get("runner_up") else "")
        return f"{x['bound']} ({x['confidence']}{share}{runner})"
    moved = "changed" if v["changed"] else "unchanged"
    text = f"Verdict ({moved}): {one(v['base'])} → {one(v['cand'])}"
    return ["", f"**Verdict** ({moved}): {one(v['base'])} → {one(v['cand'])}" if markdown else text]


def _changes(ch: dict[str, Any], markdown: bool) -> list[str]:
    lines = ["", "### What changed the most" if markdown else "What changed the most (per step, mean):"]
    if not ch["rows"]:
        return lines + ["nothing"]
    rows = []
    for i, r in enumerate(ch["rows"]):
        share = f"{100 * r['share_of_change']:.0f}%" if r.get("share_of_change") is not None else "-"
        rows.append([str(i + 1), r["name"], figure(r["delta_us"], "us", True), figure(r["base_us"], "us"),
                     figure(r["cand_us"], "us"), share])
        for k in r.get("kernels") or []:
            name = short_kernel_name(k["name"]) if k["kernel"] else k["name"]
            rows.append(["", ("↳ " if markdown else "  ") + (f"`{name}`" if markdown and k["kernel"] else name),
                         figure(k["delta_us"], "us", True), figure(k["base_us"], "us"), figure(k["cand_us"], "us"), ""])
    lines += table_lines(["#", "where", "change per step", "baseline", "candidate", "of the change"], rows, markdown)
    rest = (f"; the other {ch['rest_rows']} parts: {figure(ch['rest_us'], 'us', True)}" if ch["rest_rows"] else "")
    lines.append("")
    lines.append(f"The numbered rows add up to {figure(ch['explained_us'], 'us', True)} of the "
                 f"{figure(ch['delta_us'], 'us', True)} change of the mean step time{rest} (the headline gives the median step).")
    return lines


NAME_CHARS = 100  # kernel and op names shown in text and markdown (the JSON has them whole, up to 1,000)


def short_kernel_name(name: str) -> str:
    """A kernel or op name for a table: C++ kernels without `void` and their parameter list (templates
    tell overloads apart, parameters rarely do), then the first NAME_CHARS characters."""
    if name.startswith("void "):
        name, depth = name[5:], 0
        for i in range(len(name) - 1, 0, -1):  # the parameter list: the group of parentheses that ends the name
            depth += (name[i] == ")") - (name[i] == "(")
            if depth == 0:
                name = name[:i] if name[i] == "(" and name.endswith(")") else name
                break
    return name if len(name) <= NAME_CHARS else name[:NAME_CHARS - 1] + "…"


def _summary(result: dict[str, Any], markdown: bool) -> list[str]:
    rows = []
    for name in SUMMARY_METRICS:
        m = _metric(result, name)
        if not m["base"] and not m["cand"]:  # not measured, or zero on both sides (no communication, say)
            continue
        noise = f"±{figure(m['noise'], m['unit'])}" if m["noise"] is not None else "-"
        rows.append([m["label"], figure(m["base"], m["unit"]), figure(m["cand"], m["unit"]),
                     figure(m["delta"], m["unit"], True), pct(m["delta_pct"]), noise, m["status"]])
    return ["", "### Summary" if markdown else "Summary:"] + table_lines(
        ["figure", "baseline", "candidate", "change", "%", "noise", ""], rows, markdown)


def _gate(gate: list[dict[str, Any]], markdown: bool) -> list[str]:
    broken = [g for g in gate if g["broken"]]
    head = f"Gate: {'FAILED' if broken else 'passed'} ({len(broken)} of {len(gate)} rules broken)"
    lines = ["", f"### {head}" if markdown else head]
    for g in gate:
        mark = "BROKEN" if g["broken"] else "ok"
        figures = (f"{figure(g['base'], g['unit'])} → {figure(g['cand'], g['unit'])}, {figure(g['delta'], g['unit'], True)} "
                   f"({pct(g['delta_pct'])})" if g["delta"] is not None else "not measured")
        noise = f", noise ±{figure(g['noise'], g['unit'])}" if g["noise"] is not None else ""
        rule = f"`{g['rule']}`" if markdown else repr(g["rule"])
        lines.append(f"{'- ' if markdown else '  '}{mark}: {rule}: {figures}{noise}; {g['reason']}")
    return lines


def _ranks(rows: list[dict[str, Any]], markdown: bool) -> list[str]:
    if not rows:
        return []
    out, table = ["", "### Rank by rank" if markdown else "Rank by rank:"], []
    for r in rows:
        if r["rank"] is None:
            out.append("Not on both sides: " + ", ".join(r["unmatched"]))
            continue
        m = {x["name"]: x for x in r["metrics"]}
        top = r["top_change"]
        table.append([str(r["rank"]), figure(m["step_time"]["base"], "us"), figure(m["step_time"]["cand"], "us"),
                      pct(m["step_time"]["delta_pct"]), m["step_time"]["status"],
                      f"{top['name']} {figure(top['delta_us'], 'us', True)}" if top else "-",
                      f"{r['verdict']['base']} → {r['verdict']['cand']}"])
    return out[:2] + table_lines(["rank", "step base", "step cand", "change", "", "top change", "verdict"], table, markdown) + out[2:]


def _joined(table: dict[str, Any], what: str, markdown: bool) -> list[str]:
    rows = [[short_kernel_name(r["name"]), figure(r["base_us"], "us"), figure(r["cand_us"], "us"), figure(r["delta_us"], "us", True),
             pct(r["delta_pct"]), f"{r['base_count']:.3g} → {r['cand_count']:.3g}"] for r in table["rows"][:TABLE_ROWS]]
    head = f"{what} joined by name, per step, largest change first ({min(TABLE_ROWS, table['rows_total'])} of {table['rows_total']})"
    body = table_lines(["name", "baseline", "candidate", "change", "%", "calls per step"], rows, markdown)
    if markdown:
        return ["", f"<details><summary>{head}</summary>", ""] + body + ["", "</details>"]
    return ["", head + ":"] + body
