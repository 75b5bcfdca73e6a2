"""What-if replays (`analysis.whatif.whatif_entry`) as text or markdown: what `kinetoscope whatif` prints."""
from __future__ import annotations

from .units import human_us, md, percent, table_lines


def render(entries: list[dict], markdown: bool = False) -> str:
    """One block per trace: the edits, how many events each changed, and the re-timed steps."""
    text = md if markdown else str
    out: list[str] = []
    for entry in entries:
        out.append(f"## {text(entry['path'])}" if markdown else f"== {entry['path']} ==")
        if entry.get("error"):
            out += [f"error: {text(entry['error'])}", ""]
            continue
        result = entry["whatif"]
        if result.get("note"):
            out += [f"note: {text(result['note'])}", ""]
            continue
        edits = result["edits"]
        if edits:
            out.append("edits: " + ", ".join(f"{text(e)} ({result['matched'].get(e, 0):,} events)" for e in edits))
        else:
            out.append("edits: none (the unedited replay)")
        if markdown:
            out.append("")
        rows = [[s["name"], human_us(s["recorded_us"]), human_us(s["predicted_us"]),
                 human_us(s["recorded_us"] - s["predicted_us"])] for s in result["steps"]]
        out.extend(table_lines(["step", "recorded", "predicted", "saved"], rows, markdown))
        if "steps_total" in result:  # a long run: the first steps listed, the rest summarised
            most = result["most_changed_step"]
            out.append(f"... {result['steps_total'] - len(rows):,} more of {result['steps_total']:,} steps; p90 "
                       f"{human_us(result['recorded_p90_step_us'])} recorded, {human_us(result['p90_step_us'])} "
                       f"predicted; changed most: {text(most['name'])} (step {most['index']:,}), "
                       f"{human_us(most['recorded_us'])} -> {human_us(most['predicted_us'])}")
        if markdown:
            out.append("")
        share = result["saving_share"]
        out.append(f"median step: {human_us(result['recorded_median_step_us'])} recorded, "
                   f"{human_us(result['median_step_us'])} predicted; {human_us(result['saving_us'])} saved per step"
                   + (f" ({percent(share)}; {share_window(result)})" if share is not None else ""))
        for edit, why in (result.get("notes") or {}).items():
            out.append(f"note: {text(edit)}: {text(why)}")
        if result.get("device_behind"):
            out.append(f"note: the device takes {human_us(result['replay_median_step_us'])} per step, behind the host's "
                       f"{human_us(result['recorded_median_step_us'])} (its launch queue grows through the window): the "
                       f"saving is on the device's pace, the predicted steps never below the host's own time")
        out.append("")
    return "\n".join(out)


def share_window(saving: dict) -> str:
    """The step the savings' shares are of, in words: the verdict's judged one (the same denominator as its share)
    or the median recorded step."""
    base = saving.get("share_base_us")
    if saving.get("share_of") == "judged" and base is not None:
        return f"shares of the {human_us(base)} step the verdict judges"
    if saving.get("share_of") == "replayed":
        return "shares of the replay's median step (the device runs behind the host)"
    return "shares of the median step"


def render_runs(runs: list[dict], markdown: bool = False) -> str:
    """`straggler=median` per multi-rank run: each rank's steps recorded and predicted, and the run's median."""
    text = md if markdown else str
    out: list[str] = []
    for run in runs:
        out.append(f"## {text(run['run'])}" if markdown else f"== run {run['run']} ==")
        result = run["whatif"]
        if result is None:
            out += [f"note: {run['note']}", ""]
            continue
        out.append(f"edits: {run['edits'][0]} (stragglers: rank {', '.join(map(str, run['stragglers']))})")
        if markdown:
            out.append("")
        rows = [[str(r["rank"]), str(s["step"]), human_us(s["recorded_us"]), human_us(s["predicted_us"])]
                for r in result["ranks"] for s in r["steps"]]
        out.extend(table_lines(["rank", "step", "recorded", "predicted"], rows, markdown))
        if markdown:
            out.append("")
        out.append(f"median step: {human_us(result['recorded_median_step_us'])} recorded, "
                   f"{human_us(result['median_step_us'])} predicted ({percent(result['saving_share'] or 0)} saved)")
        out += extra_work_lines(result)
        out.append("")
    return "\n".join(out)


def extra_work_lines(result: dict) -> list[str]:
    """What `straggler=median` removes, one line per straggler: its extra work by name, and the step's loss."""
    out = []
    for entry in result.get("extra_work") or []:
        names = ", ".join(f"{n['name']} {human_us(n['per_step_us'])}" for n in entry["names"][:4]) or "nothing by name"
        out.append(f"rank {entry['rank']}'s extra work per step, beyond the median rank's: {names}; "
                   f"every rank's step loses {human_us(result.get('removed_us') or 0)} (median)")
    return out
