"""CI gate rules: `METRIC OP CHANGE`, checked against a comparison's metrics.

    rule    := METRIC OP CHANGE          e.g.  step_time > +5%    exposed_comm > +2ms    memory_peak > +500MB
    METRIC  := a metric name of the comparison (METRIC_NAMES)
    OP      := >  >=  <  <=
    CHANGE  := [+|-]NUMBER UNIT
    UNIT    := %                         of the baseline's figure
             | ns us µs ms s             time metrics
             | B KB MB GB  KiB MiB GiB   memory_peak (KB = 1000 B, KiB = 1024 B)

A rule compares the change (candidate minus baseline) with CHANGE: `step_time > +5%` is broken when the
median step time grew by more than 5%; `step_time < -50%` when it fell by more than half. A change
within noise (`compare.status`) breaks no rule unless noise is ignored: the step-to-step spread says the
same runs could differ that much. A figure missing on either side (no memory records, say) breaks no
rule; the result says it could not be checked.
"""
from __future__ import annotations

import operator
import re
from typing import Any, Callable, Optional

import msgspec

TIME_UNITS = {"ns": 1e-3, "us": 1.0, "µs": 1.0, "μs": 1.0, "ms": 1e3, "s": 1e6}  # -> µs
BYTE_UNITS = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}
OPS: dict[str, Callable[[float, float], bool]] = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
METRIC_UNITS = {  # name -> "us" or "bytes" (the comparison's metric list, in its order)
    **{name: "us" for name in (
        "step_time", "step_time_p90", "step_time_mean", "dataloader_wait", "comm", "exposed_comm", "compute", "idle",
        "idle_dataloader", "idle_sync", "idle_host", "idle_launch", "idle_unlinked", "idle_comm", "idle_graph",
        "outside", "launch_p50", "launch_p99")},
    "memory_peak": "bytes",
}
METRIC_NAMES = tuple(METRIC_UNITS)
# ASCII digits and blanks only (re.ASCII): `\d` would read `٥%` (an Arabic-Indic five) as 5%, and float() takes it
_RULE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(>=|<=|>|<)\s*([+-]?)\s*(\d+(?:\.\d*)?|\.\d+)\s*(%|[A-Za-zµμ]+)\s*$",
                   re.ASCII)


class RuleError(ValueError):
    """A rule that does not parse; the message quotes it and says what is wrong."""


class Rule(msgspec.Struct, frozen=True):
    text: str
    metric: str
    op: str
    value: float  # % of the baseline when relative, else µs or bytes
    relative: bool


def parse_rule(text: str) -> Rule:
    """Parse one `--fail-if` rule.

    Raises:
        RuleError: the rule does not follow the grammar, names an unknown metric, or a unit that does not
            fit the metric.
    """
    m = _RULE.match(text[:200])
    if m is None or len(text) > 200:
        raise RuleError(f"bad rule {text[:200]!r}: expected METRIC OP CHANGE, e.g. 'step_time > +5%' or "
                        f"'exposed_comm > +2ms' (OP: > >= < <=)")
    name, op, sign, number, unit = m.groups()
    if name not in METRIC_UNITS:
        raise RuleError(f"bad rule {text!r}: unknown metric {name!r}; one of {', '.join(METRIC_NAMES)}")
    value = float(number) * (-1.0 if sign == "-" else 1.0)
    if unit == "%":
        return Rule(text=text.strip(), metric=name, op=op, value=value, relative=True)
    units = TIME_UNITS if METRIC_UNITS[name] == "us" else BYTE_UNITS
    if unit not in units:
        raise RuleError(f"bad rule {text!r}: unit {unit!r} does not fit {name} (use %, or one of {', '.join(units)})")
    return Rule(text=text.strip(), metric=name, op=op, value=value * units[unit], relative=False)


def check(rules: list[Rule], metrics: list[dict[str, Any]], ignore_noise: bool = False) -> list[dict[str, Any]]:
    """Each rule's outcome against the comparison's metrics: `broken`, and why (`reason`)."""
    by_name = {m["name"]: m for m in metrics}
    return [_check_one(rule, by_name.get(rule.metric), ignore_noise) for rule in rules]


def _check_one(rule: Rule, m: Optional[dict[str, Any]], ignore_noise: bool) -> dict[str, Any]:
    out = {"rule": rule.text, "metric": rule.metric, "broken": False, "base": None, "cand": None, "delta": None,
           "delta_pct": None, "noise": None, "unit": METRIC_UNITS[rule.metric]}
    if m is None or m["delta"] is None:
        return {**out, "reason": "not measured on both sides; not checked"}
    out.update({k: m[k] for k in ("base", "cand", "delta", "delta_pct", "noise")})
    change = _relative(m) if rule.relative else m["delta"]
    holds = OPS[rule.op](change, rule.value)
    if holds and m["status"] == "within noise" and not ignore_noise:
        return {**out, "reason": "the change is within the step-to-step noise; not broken (--ignore-noise to count it)"}
    return {**out, "broken": holds, "reason": "broken" if holds else "holds"}


def _relative(m: dict[str, Any]) -> float:
    if m["delta_pct"] is not None:
        return m["delta_pct"]
    return 0.0 if m["delta"] == 0 else float("inf") if m["delta"] > 0 else float("-inf")  # from a zero baseline
