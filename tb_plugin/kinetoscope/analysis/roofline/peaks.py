"""The device's roofs: the peak rate of each kind of arithmetic and the memory bandwidth of the GPU a trace ran on,
the two ceilings a roofline puts each op under.

The figures are the vendors' own, from each device's datasheet (`peaks.json` beside this module; each entry names
its document and its address): peak **dense** rates, at the boost clock the datasheet's figures are computed at.
NVIDIA prints tensor-core rates with 2:4 structured sparsity (the asterisked figures), which no dense GEMM reaches:
the file holds half of those. AMD's MI200 data sheets give the two-die module, but ROCm shows each die (GCD) as a
device of its own, with half the compute units, memory and bandwidth: the file holds half of those too.

`choose` picks the entry for a trace from its `deviceProperties` (the device's name as the CUDA or HIP runtime
spells it, and its SM or compute-unit count, `numSms`). Where the name is not enough (the MI250X and the MI250 share
"AMD Instinct MI250X / MI250"), the SM count decides; a partitioned device (an MI300X in CPX mode shows 38 CUs)
matches no entry rather than borrowing the whole device's figures.

## A file of one's own (`--peaks FILE` or `KINETOSCOPE_PEAKS`)

A device the built-in file lacks, or figures one prefers (measured ones, a power-capped part), go in a JSON file of
the built-in file's form (a top-level `note` may say what the file is). Its entries are tried before the built-in
ones, and one with the name of a built-in entry replaces that entry::

    {"devices": [
      {"name": "NVIDIA H100 SXM5 80GB at 500 W",
       "match": ["NVIDIA H100 80GB HBM3"], "sms": 132,
       "tflops": {"bf16": 700, "fp16": 700, "fp32": 50},
       "tbps": 3.0,
       "source": "our GEMM and copy benchmarks, May 2025"}
    ]}

- `name` (required): what the figures are of, as a person reads it; also the name a built-in entry is replaced by.
- `match`: the device names it applies to, as `deviceProperties` spells them (`torch.cuda.get_device_name()`
  gives the same text), with `*`, `?` and `[...]` as in shell globs; case and white space do not count. Without
  it, `name` itself. An empty pattern `""` matches a device whose name the trace leaves empty.
- `sms`: the SM (NVIDIA) or compute-unit (AMD) count the figures are for; a device reporting another count is
  not this one. Without it, any count.
- `tflops` (required): peak dense rates in TFLOP/s (1e12 per second; int8 in TOPS) by the dtype of the operands:
  `fp64` (the best fp64 rate, tensor cores included), `fp64_vector` (fp64 without them, where it differs),
  `fp32` (fp32 on the vector units), `fp32_matrix` (fp32 on matrix units, where they run it: AMD CDNA 2), `tf32`,
  `bf16`, `fp16`, `fp8`, `int8` (tensor or matrix units). Leave out what the device does not have.
- `tbps` (required): the memory bandwidth in TB/s (1e12 bytes per second).
- `source`, `url`, `clock` (strings), `clock_mhz` (a number: breaks a tie between entries for one device by its
  `clockRate`, where the trace gives one) and `note`: optional.

A file that cannot be used is refused whole, with a `PeaksError` naming the file and the entry: not JSON, over
1 MB or 1,000 entries, a field of the wrong type, an unknown field or dtype, a number that is not finite and
positive (or is beyond 1e6 TFLOP/s or 1e3 TB/s: figures in the wrong unit), two entries of one name.
"""
from __future__ import annotations

import fnmatch
import functools
import importlib.resources
import json
import math
import os
import re
from collections.abc import Sequence
from typing import Any, Optional

import msgspec

DTYPES = ("fp64", "fp64_vector", "fp32", "fp32_matrix", "tf32", "bf16", "fp16", "fp8", "int8")
ADVICE = "add it with --peaks FILE or KINETOSCOPE_PEAKS"
BUILTIN = "built-in peaks.json"

MAX_FILE_BYTES = 1_000_000
MAX_ENTRIES = 1_000
MAX_PATTERNS = 64  # per entry
MAX_TEXT = 2_000  # characters of one string field
MAX_TFLOPS = 1e6  # one EFLOP/s per device: a figure above it was written in FLOP/s, not TFLOP/s
MAX_TBPS = 1e3
MAX_CLOCK_MHZ = 1e5
MAX_NAME = 256  # characters of a device name worth matching (real ones are under 64)
FIELDS = ("name", "match", "sms", "tflops", "tbps", "source", "url", "clock", "clock_mhz", "note")
GLOB = frozenset("*?[")
_LITERAL_HEAD = re.compile(r"[^*?\[]*")  # a pattern's text before its first glob character: what a name must start
# with (names that do not are not matched by fnmatch, whose patterns are compiled on first use: 38 of them, 1.5 ms)


class PeaksError(ValueError):
    """A peaks file that cannot be used; the message names the file, the entry and what is wrong with it."""


class Peaks(msgspec.Struct, frozen=True):
    """One device's ceilings: peak dense FLOP/s by dtype (keys among `DTYPES`), memory bandwidth in bytes/s, where
    the figures come from (a datasheet's title and address, or the user file) and the clock they are at.

    The cached built-in entries share these objects: read `flops`, never write it."""

    device: str
    flops: dict[str, float]
    bandwidth: float
    source: str
    clock: str

    def compute_peak(self, dtype: Optional[str], matrix: bool) -> Optional[float]:
        """The compute ceiling, FLOP/s, of work in `dtype` (a key of `DTYPES`).

        Matrix work (GEMMs, convolutions, attention) runs at the tensor- or matrix-unit rate of its dtype. Where
        the device has no such unit for it, the vector units do the arithmetic in fp32 (tf32 is fp32 there; a
        bf16 GEMM on a V100 is fp32 FMAs), so tf32, bf16 and fp16 fall back to the fp32 rate (on matrix units
        where the device runs fp32 there); fp8 and int8 have no such path and no figure. Vector work (elementwise,
        copies) runs at the fp64 vector rate for fp64 and the fp32 rate otherwise.

        Args:
            dtype: the operands' dtype; None or an unknown one gives None.
            matrix: whether the work runs on matrix units.

        Returns:
            FLOP/s, or None where the figures do not say.
        """
        if dtype not in DTYPES:
            return None
        flops = self.flops
        if dtype.startswith("fp64"):
            best = flops.get("fp64", flops.get("fp64_vector"))
            return best if matrix else flops.get("fp64_vector", best)
        if not matrix:
            return flops.get("fp32")
        if dtype in ("fp8", "int8"):
            return flops.get(dtype)
        fp32 = flops.get("fp32_matrix", flops.get("fp32"))
        return flops.get(dtype, fp32) if dtype in ("tf32", "bf16", "fp16") else fp32

    def ridge(self, dtype: Optional[str], matrix: bool = True) -> Optional[float]:
        """The arithmetic intensity (FLOP per byte) where the compute roof meets the memory one: work of lower
        intensity is bound by bandwidth. None where the compute peak is unknown."""
        peak = self.compute_peak(dtype, matrix)
        return None if peak is None else peak / self.bandwidth


class Entry(msgspec.Struct, frozen=True):
    """One device of a peaks file: the name patterns (case-folded, white space removed) and SM count it is
    recognised by, the clock its figures are at (MHz, where known), its figures and the file it comes from."""

    patterns: tuple[str, ...]
    sms: Optional[int]
    clock_mhz: Optional[float]
    peaks: Peaks
    origin: str
    user: bool


class Choice(msgspec.Struct, frozen=True):
    """The figures chosen for a trace's device, or None; `reason` says to a person why these, or why none."""

    peaks: Optional[Peaks]
    reason: str


@functools.lru_cache(maxsize=1)
def builtin_peaks() -> tuple[Entry, ...]:
    """The built-in entries (`peaks.json`, shipped with the package), read once."""
    shipped = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peaks.json")
    try:  # beside this module, as setup.py installs it (3 ms less than importlib.resources' first read)
        with open(shipped, encoding="utf-8") as handle:
            text = handle.read()
    except OSError:  # a zipped install
        text = importlib.resources.files(__package__).joinpath("peaks.json").read_text(encoding="utf-8")
    return _parse(text, BUILTIN, user=False)


def parse_peaks(text: str, origin: str) -> tuple[Entry, ...]:
    """The entries of a user's peaks file (the format is in this module's docstring).

    Args:
        text: the file's text.
        origin: where it came from (its path), for messages and for each entry's `source`.

    Returns:
        Its entries, in the file's order; pass them to `choose` with the built-in ones after them.

    Raises:
        PeaksError: the file cannot be used; the message names `origin`, the entry and the problem.
    """
    return _parse(text, origin, user=True)


def choose(device_properties: Any, entries: Optional[Sequence[Entry]] = None,
           device_id: Optional[int] = None) -> Choice:
    """The peak figures for a trace's device, from its `deviceProperties`.

    The device is the entry whose `id` is `device_id` (else, where no entry has an id, the `device_id`-th), or
    the first one. Its name picks the entries (case and white space do not count), an exact pattern before a
    glob; an entry for another SM count is out; then the one for its SM count, then the one nearest its
    `clockRate` (kHz, where given), then the first. User entries come before the built-in ones, and a user entry
    replaces the built-in one of the same name.

    Args:
        device_properties: the trace's `deviceProperties` as its JSON has it (anything may be any type).
        entries: the candidates, e.g. `parse_peaks(text, path) + builtin_peaks()`; None: the built-in ones.
        device_id: the device whose figures are wanted; None: the first.

    Returns:
        The figures and why, or None and why not.
    """
    device, reason = _device(device_properties, device_id)
    if device is None:
        return Choice(None, reason)
    raw_name = device.get("name")
    name = raw_name if isinstance(raw_name, str) else ""
    sms = _count(device.get("numSms"))
    clock_khz = _count(device.get("clockRate"))
    candidates = _ordered(builtin_peaks() if entries is None else entries)
    return _match(candidates, name, sms, None if clock_khz is None else clock_khz / 1e3)


def _device(device_properties: Any, device_id: Optional[int]) -> tuple[Optional[dict], str]:
    """The `deviceProperties` entry of the device, or None and why there is none."""
    if not isinstance(device_properties, list) or not device_properties:
        return None, "the trace has no deviceProperties, so its device (and its peak figures) are unknown"
    devices = [p for p in device_properties if isinstance(p, dict)]
    if not devices:
        return None, "the trace's deviceProperties describes no device"
    if device_id is None:
        return devices[0], ""
    ids = [_integer(p.get("id")) for p in devices]
    if device_id in ids:
        return devices[ids.index(device_id)], ""
    if all(i is None for i in ids) and isinstance(device_id, int) and 0 <= device_id < len(devices):
        return devices[device_id], ""
    listed = ", ".join(str(i) for i in ids if i is not None)[:80] or "none"
    return None, f"deviceProperties describes no device {device_id!r} (its ids: {listed})"


def _ordered(entries: Sequence[Entry]) -> list[Entry]:
    """User entries first; a built-in entry named as a user one is replaced by it."""
    users = [e for e in entries if e.user]
    replaced = {_key(e.peaks.device) for e in users}
    return users + [e for e in entries if not e.user and _key(e.peaks.device) not in replaced]


def _match(entries: Sequence[Entry], name: str, sms: Optional[int], clock_mhz: Optional[float]) -> Choice:
    """The best entry for a device of this name, SM count and clock (see `choose`), with the reason."""
    key = _key(name[:MAX_NAME])
    ranked, other_sms = [], []
    for order, entry in enumerate(entries if len(name) <= MAX_NAME else ()):
        exact = _name_match(entry.patterns, key)
        if exact is None:
            continue
        if entry.sms is not None and sms is not None and entry.sms != sms:
            other_sms.append(entry)
            continue
        gap = 0.0 if clock_mhz is None else abs(entry.clock_mhz - clock_mhz) if entry.clock_mhz else math.inf
        ranked.append(((not entry.user, not exact, entry.sms is None, gap), order, entry))
    device = f"device {_shown(name)}" if name else "a device deviceProperties leaves unnamed"
    counted = f"{sms} SMs" if sms is not None else "SM count not given"
    if not ranked:
        why = "" if not other_sms else "; the entries of that name are for " + ", ".join(
            sorted({f"{e.sms} SMs ({e.peaks.device})" for e in other_sms}))
        return Choice(None, f"no peak figures for {device} ({counted}){why}: {ADVICE}")
    ranked.sort(key=lambda r: (r[0], r[1]))
    rank, _, best = ranked[0]
    reason = f"peak figures of {best.peaks.device} ({best.origin}) for {device} ({counted})"
    ties = [e for r, _, e in ranked[1:] if r == rank and e.peaks != best.peaks]
    if ties:
        reason += f"; {len(ties)} other entr{'y' if len(ties) == 1 else 'ies'} match as well, the first is used"
    return Choice(best.peaks, reason)


def _name_match(patterns: tuple[str, ...], key: str) -> Optional[bool]:
    """True where a pattern is the name itself, False where only a glob matches it, None where none does."""
    matched = [p for p in patterns if key.startswith(_LITERAL_HEAD.match(p).group()) and fnmatch.fnmatchcase(key, p)]
    return None if not matched else any(not GLOB & set(p) for p in matched)


def _parse(text: Any, origin: str, user: bool) -> tuple[Entry, ...]:
    """A peaks file's entries, or a PeaksError naming `origin`."""
    if not isinstance(text, str):
        raise PeaksError(f"{origin}: a peaks file is text, not {type(text).__name__}")
    if len(text) > MAX_FILE_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        raise PeaksError(f"{origin}: over {MAX_FILE_BYTES:,} bytes; a peaks file is a list of devices")
    try:
        doc = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise PeaksError(f"{origin}: not JSON ({_cut(str(exc), 160)})") from None
    if not isinstance(doc, dict) or not set(doc) <= {"devices", "note"}:
        raise PeaksError(f"{origin}: a peaks file is a JSON object with a 'devices' list (and an optional 'note')")
    devices = doc.get("devices")
    if not isinstance(devices, list) or not devices:
        raise PeaksError(f"{origin}: 'devices' must be a non-empty list of devices")
    if len(devices) > MAX_ENTRIES:
        raise PeaksError(f"{origin}: {len(devices):,} devices, over the {MAX_ENTRIES:,} a peaks file may list")
    entries = tuple(_entry(raw, f"{origin}: devices[{i}]", origin, user) for i, raw in enumerate(devices))
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        first = seen.setdefault(_key(entry.peaks.device), i)
        if first != i:
            raise PeaksError(f"{origin}: devices[{i}] and devices[{first}] are both named {_shown(entry.peaks.device)}")
    return entries


def _entry(raw: Any, where: str, origin: str, user: bool) -> Entry:
    """One device of a peaks file, checked field by field."""
    if not isinstance(raw, dict):
        raise PeaksError(f"{where}: a device is a JSON object, not {type(raw).__name__}")
    name = _text(raw, "name", where, required=True)
    where = f"{where} ({_shown(name)})"
    unknown = [k for k in raw if k not in FIELDS]
    if unknown:
        raise PeaksError(f"{where}: unknown field {_shown(str(unknown[0]))}; the fields are {', '.join(FIELDS)}")
    patterns = _patterns(raw.get("match", [name]), where)
    sms = raw.get("sms")
    if sms is not None and (_count(sms) is None or sms > 1_000_000):
        raise PeaksError(f"{where}: 'sms' must be a positive whole number, not {_repr(sms)}")
    flops = _flops(raw.get("tflops"), where)
    tbps = _number(raw.get("tbps"), f"{where}: 'tbps'", MAX_TBPS, "TB/s")
    clock_mhz = raw.get("clock_mhz")
    if clock_mhz is not None:
        clock_mhz = _number(clock_mhz, f"{where}: 'clock_mhz'", MAX_CLOCK_MHZ, "MHz")
    source, url = _text(raw, "source", where, not user), _text(raw, "url", where, not user)
    clock = _text(raw, "clock", where, not user)
    _text(raw, "note", where)
    if url and not url.startswith(("https://", "http://")):
        raise PeaksError(f"{where}: 'url' must be an http(s) address, not {_shown(url)}")
    cited = ", ".join(s for s in (source, url) if s)
    source = cited if not user else f"user file {origin}" + (f": {cited}" if cited else "")
    peaks = Peaks(name, flops, tbps * 1e12, source, clock or "not stated")
    return Entry(patterns, sms, clock_mhz, peaks, BUILTIN if not user else f"user file {origin}", user)


def _patterns(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or len(value) > MAX_PATTERNS:
        raise PeaksError(f"{where}: 'match' must be a list of 1 to {MAX_PATTERNS} name patterns")
    for pattern in value:
        if not isinstance(pattern, str) or len(pattern) > MAX_NAME:
            raise PeaksError(f"{where}: a 'match' pattern must be a string of at most {MAX_NAME} characters, not "
                             f"{_repr(pattern)}")
    return tuple(_key(p) for p in value)


def _flops(value: Any, where: str) -> dict[str, float]:
    if not isinstance(value, dict) or not value:
        raise PeaksError(f"{where}: 'tflops' must be an object of TFLOP/s by dtype ({', '.join(DTYPES)})")
    flops = {}
    for dtype, tflops in value.items():
        if dtype not in DTYPES:
            raise PeaksError(f"{where}: unknown dtype {_shown(str(dtype))} in 'tflops'; the dtypes are {', '.join(DTYPES)}")
        flops[dtype] = _number(tflops, f"{where}: 'tflops'[{dtype!r}]", MAX_TFLOPS, "TFLOP/s") * 1e12
    return flops


def _number(value: Any, where: str, limit: float, unit: str) -> float:
    # compared before any float conversion: a JSON integer may have thousands of digits, which float() refuses
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value <= limit:
        raise PeaksError(f"{where} must be a finite positive number of {unit}, at most {limit:g}, not {_repr(value)}")
    return float(value)


def _text(raw: dict, field: str, where: str, required: bool = False) -> str:
    value = raw.get(field)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT:
        raise PeaksError(f"{where}: {field!r} must be a non-empty string of at most {MAX_TEXT:,} characters, not "
                         f"{_repr(value)}")
    return value


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number a peaks file may hold")


def _key(name: str) -> str:
    """A name as matching sees it: case-folded, without white space."""
    return "".join(name.split()).casefold()


def _repr(value: Any) -> str:
    """A bad value for a message, cut short (a huge integer's digits, which Python may refuse to print, too)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10 ** 30:
        return "a number of over 30 digits"
    return _cut(repr(value), 80)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _shown(text: str, limit: int = 80) -> str:
    """`text` quoted for a message, cut to `limit` characters."""
    return repr(_cut(text, limit))


def _integer(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _count(value: Any) -> Optional[int]:
    """A positive count from the trace or a file, else None (bools, floats and absurd sizes are no counts)."""
    value = _integer(value)
    return value if value is not None and 0 < value < 1 << 62 else None
