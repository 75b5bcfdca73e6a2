"""Bytes -> typed event structs, fast when the file is clean and forgiving when it is not.

The fast path is one typed msgspec decode: unknown keys are skipped in C and only the fields the
model needs are materialized (about 5x faster than `json.loads`, a third of the memory). When a
file breaks the typed schema (an ill-typed field, NaN, invalid UTF-8, bare `N/A`), the slow path
decodes generically and validates event by event, so one bad event costs one skipped event
(counted under its reason), never the file.

Here: the schema, the whole-text decode and the decoder of one piece. A streamed text is cut into pieces in
`pieces.py`; 16-digit times are read in `exact_times.py`; text msgspec refuses is read in `forgiving.py`.
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple, Optional, Union

import msgspec

from .deps import MSGSPEC_REFUSALS
from .exact_times import EXACT_SNIFF_BYTES, USABLE_NS, needs_exact_times, ns_of, whole_second
from .forgiving import DecodeError, forgiving_json

NAN = float("nan")
RAW_ABSENT = msgspec.Raw()  # an absent Raw-typed arg: no text


class Args(msgspec.Struct, frozen=True, gc=False):
    """The `args` keys the model keeps; everything else is skipped by the decoder."""

    external_id: int = msgspec.field(default=-1, name="External id")
    external_id_2021: int = msgspec.field(default=-1, name="external id")
    correlation: int = -1
    device: int = -1
    stream: int = -1
    device_type: float = msgspec.field(default=NAN, name="Device Type")
    device_id: float = msgspec.field(default=NAN, name="Device Id")
    bytes: float = msgspec.field(default=NAN, name="Bytes")
    total_allocated: float = msgspec.field(default=NAN, name="Total Allocated")
    total_reserved: float = msgspec.field(default=NAN, name="Total Reserved")
    addr: float = msgspec.field(default=NAN, name="Addr")
    ev_idx: int = msgspec.field(default=-1, name="Ev Idx")  # Kineto's per-file event number (>= 2.0)
    ev_idx_legacy: int = msgspec.field(default=-1, name="Profiler Event Index")  # its 1.12-1.13 spelling
    name: Optional[str] = None  # process_name / thread_name metadata
    labels: Optional[str] = None  # process_labels metadata
    # Collective fields (record_param_comms, nccl:*/gloo:* annotations, NCCL kernels; torch >= 2.1). Any
    # type: a writer that spells one as a string never costs its event; the builder reads them leniently.
    seq: Any = msgspec.field(default=None, name="Seq")
    pg_name: Any = msgspec.field(default=None, name="Process Group Name")
    coll_name: Any = msgspec.field(default=None, name="Collective name")
    in_nelems: Any = msgspec.field(default=None, name="In msg nelems")
    out_nelems: Any = msgspec.field(default=None, name="Out msg nelems")
    group_size: Any = msgspec.field(default=None, name="Group size")
    dtype: Any = msgspec.field(default=None, name="dtype")
    # ... and the process group's description (`default_pg`, `tp`, `dp`) and ranks (`[0, 2]`), Kineto's names
    # (libkineto output_json.cpp: kProcessGroupDesc, kGroupRanks)
    pg_desc: Any = msgspec.field(default=None, name="Process Group Description")
    pg_ranks: Any = msgspec.field(default=None, name="Process Group Ranks")
    comms_id: Any = msgspec.field(default=None, name="Comms Id")  # on the call and on its NCCL kernel alike
    # a point-to-point call's ends (send, recv: global ranks; kP2pSrc, kP2pDst)
    src_rank: Any = msgspec.field(default=None, name="Src Rank")
    dst_rank: Any = msgspec.field(default=None, name="Dst Rank")
    # GPU activity fields for the kernel table (trace/gpu_args.py): Any, so an ill-typed one never costs its event;
    # grid and block kept as their JSON text (Raw: no list of ints built per kernel), read by `_columns.c`.
    copy_bytes: Any = msgspec.field(default=None, name="bytes")  # memcpy/memset (the memory events' is "Bytes")
    grid: msgspec.Raw = RAW_ABSENT
    block: msgspec.Raw = RAW_ABSENT
    registers: Any = msgspec.field(default=None, name="registers per thread")
    shared_memory: Any = msgspec.field(default=None, name="shared memory")
    blocks_per_sm: Any = msgspec.field(default=None, name="blocks per SM")
    occupancy: Any = msgspec.field(default=None, name="est. achieved occupancy %")
    # An op's input shapes (`record_shapes=True`) as their JSON text: the op table groups calls by it.
    input_dims: msgspec.Raw = msgspec.field(default=RAW_ABSENT, name="Input Dims")
    # ... and the rest of what it records of its inputs: the roofline's work models read them (analysis/roofline).
    input_types: msgspec.Raw = msgspec.field(default=RAW_ABSENT, name="Input type")
    input_strides: msgspec.Raw = msgspec.field(default=RAW_ABSENT, name="Input Strides")
    concrete_inputs: msgspec.Raw = msgspec.field(default=RAW_ABSENT, name="Concrete Inputs")
    # The Python stack of an op in <= 1.13-era files (`file(line): func;...`, innermost first): the op table groups
    # calls by its first frame where no python_function events exist.
    call_stack: msgspec.Raw = msgspec.field(default=RAW_ABSENT, name="Call stack")
    # What torch.profiler's trace validator checks (trace/validator_args.py): the cudaEventRecord a stream wait
    # or event sync waits on, and a backward node's autograd sequence number. Any: never costs its event.
    wait_corr: Any = msgspec.field(default=None, name="wait_on_cuda_event_record_corr_id")
    seq_number: Any = msgspec.field(default=None, name="Sequence number")
    # A counter event's value (`ph: "C"`) where Kineto writes it for hardware counters (CUPTI PM sampling:
    # libkineto output_json.cpp `handleCounterEvent` writes `args: {"": value}`); Any: never costs its event.
    counter: Any = msgspec.field(default=None, name="")


NO_ARGS = Args()


class Event(msgspec.Struct, gc=False):
    """One entry of `traceEvents`; absent fields take sentinel defaults the model builder checks."""

    ph: str = ""
    name: str = ""
    cat: str = ""
    pid: Union[int, str] = -1
    tid: Union[int, str] = -1
    ts: float = NAN
    dur: float = NAN
    id: Union[int, str, None] = None
    args: Args = NO_ARGS


class TraceDoc(msgspec.Struct, gc=False):
    """The top-level object; `traceEvents` may come before or after the other keys."""

    traceEvents: list[Event]
    baseTimeNanoseconds: Optional[int] = None
    schemaVersion: Any = None
    deviceProperties: Any = None
    distributedInfo: Any = None
    displayTimeUnit: Any = None
    traceName: Any = None


class _ExactEvent(Event, gc=False):
    """An event whose times keep their JSON text (read by `ns_of`); every other field decodes as in `Event`."""

    ts: msgspec.Raw = RAW_ABSENT
    dur: msgspec.Raw = RAW_ABSENT


class _ExactDoc(TraceDoc, gc=False):
    traceEvents: list[_ExactEvent]


class Decoded(msgspec.Struct):
    """What the decoder hands the model builder."""

    doc: TraceDoc
    legacy_external_id: bool = False  # the 2021 spelling "external id" occurs (else its column is skipped)
    skipped: dict[str, int] = msgspec.field(default_factory=dict)
    warnings: list[str] = msgspec.field(default_factory=list)
    source_index: Optional[list[int]] = None  # each kept event's index in the file's traceEvents (None: all kept)
    total: int = 0  # the events in the text, skipped ones included


_FAST = msgspec.json.Decoder(TraceDoc)
_EXACT = msgspec.json.Decoder(_ExactDoc)
_EXACT_EVENTS = msgspec.json.Decoder(list[_ExactEvent])
_EVENTS = msgspec.json.Decoder(list[Event])
LEGACY_KEY = b'"external id"'


class NotSplittable(Exception):
    """The text cannot be decoded chunk by chunk (unusual layout or content): decode it whole."""


class Piece(NamedTuple):
    """Where a decoded batch of events lies in the uncompressed text, so one event can be re-read later.

    `start`/`end` are byte offsets. HEAD: the text [0, end) holds the top-level keys before
    `traceEvents` and its first events (decode it + `]}`). MIDDLE: [start, end) is `,` then events
    separated by commas (decode `[` + text[start+1:end] + `]`). TAIL: [start, end) is `,`, the last
    events, `]` and the rest of the document. WHOLE: the whole file.
    """

    kind: int
    start: int
    end: int


PIECE_HEAD, PIECE_MIDDLE, PIECE_TAIL, PIECE_WHOLE = range(4)
WHOLE_FILE = Piece(PIECE_WHOLE, 0, -1)


class PieceDecoder:
    """Decodes one piece of text at a time, the way the whole file would be decoded.

    Typed and fast when the piece is clean. A piece that breaks the schema (an ill-typed field, NaN, bare
    N/A, invalid UTF-8) is decoded leniently on its own, so such a file never has to be decoded whole and its
    memory stays one piece's worth. With 16-digit fractional times (`needs_exact_times`) every piece's times are
    read from their text and rebased to one whole second, set by the first piece holding a time (`exact_rebase`).
    """

    def __init__(self, exact: bool) -> None:
        self.exact = exact
        self.rebase: Optional[int] = None
        self.skipped: dict[str, int] = {}
        self.warnings: list[str] = []

    def doc(self, text) -> tuple[TraceDoc, Optional[tuple[list[int], int]]]:
        """A whole-document piece (the head, with `]}` added, or the tail, with `{"traceEvents":` added)."""
        try:
            doc = typed(text, _EXACT if self.exact else _FAST)
            times = _exact_times(doc.traceEvents) if self.exact else None
        except LookAlikeCut:
            raise
        except NotSplittable:
            return self._lenient(bytes(text))
        if times is None:
            return doc, None
        return _exact_doc(doc, self._rebase(times[0]), times), None

    def events(self, view) -> tuple[list, Optional[tuple[list[int], int]]]:
        """A middle piece: `[` events `]`."""
        try:
            events = typed(view, _EXACT_EVENTS if self.exact else _EVENTS)
            times = _exact_times(events) if self.exact else None
        except LookAlikeCut:
            raise
        except NotSplittable:
            doc, index = self._lenient(b'{"traceEvents":' + bytes(view) + b"}")
            return doc.traceEvents, index
        if times is None:
            return events, None
        return _exact_events(events, self._rebase(times[0]), times), None

    def exact_rebase(self) -> Optional[int]:
        """The rebase a piece of this file decoded elsewhere must be given (`decode_middle`, `scan_text`): None for a
        file without exact times. Known once a piece holding a time was decoded; pieces go elsewhere only then."""
        return self.rebase if self.exact else None

    def _rebase(self, ts_ns: list) -> int:
        """The whole second all pieces are rebased to: set by the first piece holding a time."""
        if self.rebase is None:
            self.rebase = whole_second(ts_ns)
        return self.rebase or 0

    def _lenient(self, text: bytes) -> tuple[TraceDoc, Optional[tuple[list[int], int]]]:
        try:
            try:
                obj, warnings = msgspec.json.decode(text), []
            except MSGSPEC_REFUSALS as exc:
                obj, warnings = forgiving_json(text, exc)
            decoded = _decode_lenient(obj, warnings, False)
        except DecodeError as exc:
            if exc.transient:  # cut inside a string or value: a look-alike boundary
                raise LookAlikeCut(str(exc)) from None
            raise NotSplittable(str(exc)) from None
        if self.exact:  # rebased like the exact pieces (to the µs a double holds: this piece had other trouble)
            if self.rebase is None:
                known = [e.ts for e in decoded.doc.traceEvents if math.isfinite(e.ts) and abs(e.ts) < USABLE_NS / 1000]
                self.rebase = int(min(known) * 1000) // 10**9 * 10**9 if known else None
            for e in decoded.doc.traceEvents:
                e.ts -= (self.rebase or 0) / 1000
        for reason, count in decoded.skipped.items():
            self.skipped[reason] = self.skipped.get(reason, 0) + count
        self.warnings.extend(w for w in decoded.warnings if w not in self.warnings)
        return decoded.doc, None if decoded.source_index is None else (decoded.source_index, decoded.total)


class LookAlikeCut(NotSplittable):
    """A piece ended inside a string or a nested value: its cut was a look-alike, not a boundary."""


def typed(piece, decoder):
    """Decode a piece of text; any error means the fast path cannot take it (`NotSplittable`).

    A piece cut inside a string or a nested object always reads as truncated (the closing `]` we add
    lands inside the open value): that error is a `LookAlikeCut`, so a caller may try another cut.
    """
    try:
        return decoder.decode(piece)
    except msgspec.DecodeError as exc:
        if "truncated" in str(exc):
            raise LookAlikeCut(str(exc)) from None
        raise NotSplittable(str(exc)) from None
    except MSGSPEC_REFUSALS as exc:  # bad UTF-8 (either class), a bad value
        raise NotSplittable(str(exc)) from None


class FalseCut(NotSplittable):
    """An offloaded middle piece was cut inside a string or nested value: decode the file serially instead."""


def decode_middle(text, exact_rebase: Optional[int] = None
                  ) -> tuple[list[Event], bool, Optional[tuple[list[int], int]], dict[str, int], list[str]]:
    """Decode one middle piece (`[` events `]`, as `decode_chunks` hands it to `offload`) on its own; a piece of a file
    with exact 16-digit times (`exact_rebase`: its rebase, `PieceDecoder.exact_rebase`) as the file's decoder would.

    Returns the events, whether the piece uses the 2021 "external id" spelling, the kept events' indices and the
    piece's event count when some were skipped (else None), and the skipped counts and warnings of this piece.

    Raises:
        FalseCut: the cut before or after the piece was a look-alike (the serial decode would try another).
        NotSplittable: the piece cannot be decoded on its own (the serial decode decodes such a file whole).
    """
    pieces = PieceDecoder(exact_rebase is not None)
    pieces.rebase = exact_rebase
    try:
        events, index = pieces.events(text)
    except LookAlikeCut as exc:
        raise FalseCut(str(exc)) from None
    legacy = (text.obj if isinstance(text, memoryview) else text).find(LEGACY_KEY, 0, len(text) - 1) != -1
    return events, legacy, index, pieces.skipped, pieces.warnings


def decode_trace(raw) -> Decoded:
    """Decode one uncompressed trace file.

    Args:
        raw: the whole JSON text (bytes or any buffer, e.g. a memory map).

    Returns:
        The typed document, with counts of skipped events by reason.

    Raises:
        DecodeError: the text is truncated, is not JSON, or is not a Chrome/Kineto trace object.
    """
    if not hasattr(raw, "find"):  # memoryview and other plain buffers
        raw = bytes(raw)
    legacy = raw.find(b'"external id"') != -1
    try:
        if needs_exact_times(raw, 0, EXACT_SNIFF_BYTES):
            return Decoded(_exact_doc(_EXACT.decode(raw)), legacy)
        return Decoded(_FAST.decode(raw), legacy)
    except msgspec.ValidationError as exc:
        try:
            obj = msgspec.json.decode(raw)
        except MSGSPEC_REFUSALS:  # e.g. 1e999999: out of range for msgspec, inf for json
            return _decode_lenient(*forgiving_json(bytes(raw), exc), legacy)
        return _decode_lenient(obj, [], legacy)
    except MSGSPEC_REFUSALS as exc:
        if "truncated" in str(exc) and not bytes(raw[-64:]).rstrip().endswith(b"}"):  # not a `"\ud800"` at the end
            raise DecodeError(f"truncated JSON ({len(raw)} bytes; was the file still being written?)", transient=True) from None
        return _decode_lenient(*forgiving_json(bytes(raw), exc), legacy)


def _exact_times(events: list) -> tuple[list, list]:
    """The ts and dur of exact events in ns (`ns_of`); NotSplittable where a piece's typed decode would have failed."""
    try:
        return ns_of([e.ts for e in events]), ns_of([e.dur for e in events])
    except MSGSPEC_REFUSALS as exc:
        raise NotSplittable(str(exc)) from None


def _exact_doc(doc: _ExactDoc, rebase: Optional[int] = None, times: Optional[tuple[list, list]] = None) -> TraceDoc:
    """Exact 16-digit times -> plain events, rebased to a whole second so doubles hold them to the ns.

    The rebase (by default the whole second before the earliest time) goes into `baseTimeNanoseconds`
    (which the model adds back), so absolute times are exact. A piece of a file passes the first piece's
    (and its events' ts and dur in ns, `_exact_times`).
    """
    if times is None:
        times = ns_of([e.ts for e in doc.traceEvents]), ns_of([e.dur for e in doc.traceEvents])
    if rebase is None:
        rebase = whole_second(times[0]) or 0
        base = (doc.baseTimeNanoseconds or 0) + rebase
    else:
        base = doc.baseTimeNanoseconds  # the caller adds its rebase once
    top = {name: getattr(doc, name) for name in TraceDoc.__struct_fields__ if name != "traceEvents"}
    top["baseTimeNanoseconds"] = base
    return TraceDoc(traceEvents=_exact_events(doc.traceEvents, rebase, times), **top)


def _exact_events(exact: list, rebase: int, times: tuple[list, list]) -> list[Event]:
    """Events with exact times as plain events, their times in µs after `rebase` ns (`times`: their ts and dur in
    ns)."""
    return [Event(ph=e.ph, name=e.name, cat=e.cat, pid=e.pid, tid=e.tid, id=e.id, args=e.args,
                  ts=NAN if t is None else (t - rebase) / 1000, dur=NAN if d is None else d / 1000)
            for e, t, d in zip(exact, *times)]


def _decode_lenient(obj: Any, warnings: list[str], legacy: bool) -> Decoded:
    """Validate a generically decoded document event by event, skipping what cannot be used."""
    if isinstance(obj, list):
        raise DecodeError("top-level JSON array: legacy autograd profiler format (no Kineto), not supported")
    if not isinstance(obj, dict):
        raise DecodeError(f"top-level JSON {type(obj).__name__} is not a trace object")
    raw_events = obj.get("traceEvents")
    if not isinstance(raw_events, list):
        raise DecodeError("no 'traceEvents' list: not a Chrome/Kineto trace")
    skipped: dict[str, int] = {}
    events, source_index = [], []
    for i, raw_event in enumerate(raw_events):
        event = _convert_event(raw_event, skipped)
        if event is not None:
            events.append(event)
            source_index.append(i)
    top = {k: v for k, v in obj.items() if k != "traceEvents" and k in TraceDoc.__struct_fields__}
    base = top.get("baseTimeNanoseconds")
    if base is not None and not (isinstance(base, int) and not isinstance(base, bool)):
        warnings.append(f"ignored baseTimeNanoseconds={base!r} (not an integer)")
        top.pop("baseTimeNanoseconds")
    kept_all = len(events) == len(raw_events)
    return Decoded(TraceDoc(traceEvents=events, **top), legacy, skipped, warnings, None if kept_all else source_index,
                   len(raw_events))


def _convert_event(raw_event: Any, skipped: dict[str, int]) -> Optional[Event]:
    """One event through the typed schema, coercing numeric strings; None (and a count) if unusable."""
    if not isinstance(raw_event, dict):
        reason = f"event is a JSON {type(raw_event).__name__}, not an object"
    else:
        if None in raw_event.values():  # a null field is an absent one (as the exact decoder reads it)
            raw_event = {k: v for k, v in raw_event.items() if v is not None}
        if isinstance(raw_event.get("args"), dict):
            raw_event = {**raw_event, "args": _clean_args(raw_event["args"])}
        elif "args" in raw_event:
            raw_event = {k: v for k, v in raw_event.items() if k != "args"}
        try:
            for key in ("ts", "dur"):  # an int no double holds: msgspec before 0.20 fails with a SystemError there
                if isinstance(raw_event.get(key), int):
                    float(raw_event[key])
            return msgspec.convert(raw_event, Event, strict=False)
        except OverflowError:
            reason = f"ill-typed field: Number out of range - at `$.{key}`"  # as later msgspec names it
        except msgspec.ValidationError as exc:
            reason = f"ill-typed field: {exc}"
    skipped[reason] = skipped.get(reason, 0) + 1
    return None


def _clean_args(args: dict) -> dict:
    """Drop args the schema would reject (null, NaN, wrong type): an odd arg never costs its event."""
    cleaned = {}
    for key, value in args.items():
        spec = _ARG_TYPES.get(key)
        if spec is None:
            continue
        if spec is msgspec.Raw:  # any JSON value, kept as its text
            cleaned[key] = msgspec.Raw(msgspec.json.encode(value))
            continue
        if spec is int and isinstance(value, str) and value.lstrip("-").isdigit():
            value = int(value)
        if spec is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            if math.isfinite(value):
                cleaned[key] = value
        elif isinstance(value, spec) and not isinstance(value, bool):
            cleaned[key] = value
    return cleaned


_ARG_TYPES: dict[str, Any] = {
    f.encode_name: (int if f.type is int else float if f.type is float else (int, float, str) if f.type is Any
                    else msgspec.Raw if f.type is msgspec.Raw else str)
    for f in msgspec.structs.fields(Args)
}
