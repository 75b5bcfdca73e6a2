"""Bytes -> typed event structs, fast when the file is clean and forgiving when it is not.

The fast path is one typed msgspec decode: unknown keys are skipped in C and only the fields the
model needs are materialized (about 5x faster than `json.loads`, a third of the memory). When a
file breaks the typed schema (an ill-typed field, NaN, invalid UTF-8, bare `N/A`), the slow path
decodes generically and validates event by event, so one bad event costs one skipped event
(counted under its reason), never the file.
"""
from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, NamedTuple, Optional, Union

import msgspec

from .budgets import pure_python
from .deps import MSGSPEC_REFUSALS

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
    # The Python stack of an op in <= 1.13-era files (`file(line): func;...`, innermost first): the op table groups
    # calls by its first frame where no python_function events exist.
    call_stack: msgspec.Raw = msgspec.field(default=RAW_ABSENT, name="Call stack")
    # What torch.profiler's trace validator checks (trace/validator_args.py): the cudaEventRecord a stream wait
    # or event sync waits on, and a backward node's autograd sequence number. Any: never costs its event.
    wait_corr: Any = msgspec.field(default=None, name="wait_on_cuda_event_record_corr_id")
    seq_number: Any = msgspec.field(default=None, name="Sequence number")


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
    """An event whose times keep their JSON text (read by `_ns_of`); every other field decodes as in `Event`."""

    ts: msgspec.Raw = RAW_ABSENT
    dur: msgspec.Raw = RAW_ABSENT


class _ExactDoc(TraceDoc, gc=False):
    traceEvents: list[_ExactEvent]


class DecodeError(Exception):
    """The bytes hold no usable trace; the message says why, for a person. `transient`: the text ends
    early, as a file still being written does (reading it again later may succeed)."""

    def __init__(self, message: str, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


@dataclass
class Decoded:
    """What the decoder hands the model builder."""

    doc: TraceDoc
    legacy_external_id: bool = False  # the 2021 spelling "external id" occurs (else its column is skipped)
    skipped: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    source_index: Optional[list[int]] = None  # each kept event's index in the file's traceEvents (None: all kept)
    total: int = 0  # the events in the text, skipped ones included


_FAST = msgspec.json.Decoder(TraceDoc)
_EXACT = msgspec.json.Decoder(_ExactDoc)
_EXACT_EVENTS = msgspec.json.Decoder(list[_ExactEvent])
_EXACT_VALUE = msgspec.json.Decoder(float_hook=Decimal)  # one time's text, as `_raw_ns` reads it
# Nightlies of 2024-03/04 wrote absolute epoch µs with a fraction, `{us}.{ns}` (zero-padded only from
# 2024-04-03, so `.5` may mean 5 ns): a double holds 16-digit values only to 0.25 µs, which fakes
# overlaps. In files whose first MiB shows such a time, ts and dur keep their JSON text (`_ExactEvent`), read as
# integer ns (`_raw_ns`; in C `_kineto_time.h`, also by the scanner); every other field decodes as in any file.
_SIXTEEN_DIGIT_FRACTION = re.compile(rb'"(?:ts|dur)"\s*:\s*-?\d{16,}\.\d')
EXACT_SNIFF_BYTES = 1 << 20
_USABLE_NS = 2**62  # times beyond ±this many ns are out of the model's range (trace.build's _INT_LIMIT)
_EVENTS = msgspec.json.Decoder(list[Event])
_BARE_NA = re.compile(rb"(?<=[:\[,])\s*N/A\s*(?=[,\]}])")
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
# Two consecutive events are separated by `}`, whitespace, `,`, whitespace, `{`. The same bytes can occur
# inside a string or a nested object; a cut there leaves the neighbouring piece unbalanced (an open
# string or object), which the typed decode rejects, and the file is then decoded whole.
_CUT = re.compile(rb"\}[ \t\r\n]*(,)[ \t\r\n]*\{")
_LEGACY_KEY = b'"external id"'
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
HEAD_LIMIT = 64 << 20  # a `traceEvents` key not found in this many leading bytes: decode the file whole


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
EventSink = Callable[..., None]  # (events, legacy spelling?, Piece[, kept events' indices in the piece, its event count])


class _Window:
    """A reusable byte buffer holding the not-yet-decoded text: [start, end) of `buf`.

    Allocated once and compacted in place, so streaming 1 GB costs one buffer's page faults, not one
    fresh allocation per block.
    """

    def __init__(self, capacity: int) -> None:
        self.buf = bytearray(capacity)
        self.start = self.end = 0
        self.base = 0  # offset of buf[0] in the whole text
        self.searched = 0  # no event boundary lies in [start, searched): never scan that text twice

    @classmethod
    def over(cls, text) -> _Window:
        """A window on a whole text already in memory (a writable buffer: the cuts are written into it); empty until
        `advance` moves its end."""
        win = cls(0)
        win.buf = text
        return win

    def advance(self, step: int) -> Iterable[int]:
        """Move the end of a window made by `over` through its text, `step` bytes at a time, as reading the text
        would: every search and bound (a head within HEAD_LIMIT, one event within `max_event_bytes`) then sees the
        window a stream would, without a byte copied."""
        while self.end < len(self.buf):
            n = min(step, len(self.buf) - self.end)
            self.end += n
            yield n

    def __len__(self) -> int:
        return self.end - self.start

    def _room(self, n: int) -> None:
        """Make space for n more bytes after `end`, compacting (and only rarely growing) the buffer."""
        if self.end + n > len(self.buf):
            live = self.end - self.start
            self.buf[:live] = self.buf[self.start:self.end]
            self.searched = max(0, self.searched - self.start)
            self.base += self.start
            self.start, self.end = 0, live
            if live + n > len(self.buf):
                self.buf.extend(bytes(live + n - len(self.buf)))

    def append(self, block) -> None:
        n = len(block)
        self._room(n)
        self.buf[self.end:self.end + n] = block
        self.end += n

    def read_from(self, reader, n: int) -> int:
        """Read up to n bytes from a raw file straight into the buffer; returns the count (0 at EOF)."""
        self._room(n)
        with memoryview(self.buf) as view:
            got = reader.readinto(view[self.end:self.end + n]) or 0
        self.end += got
        return got

    def consume_to(self, pos: int) -> None:
        """Drop the text before `pos` (an absolute index into `buf`); it becomes the next piece's `[`."""
        self.start = self.searched = pos
        self.buf[pos] = ord("[")


class _PieceDecoder:
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
            doc = _typed(text, _EXACT if self.exact else _FAST)
            times = _exact_times(doc.traceEvents) if self.exact else None
        except _FalseCut:
            raise
        except NotSplittable:
            return self._lenient(bytes(text))
        if times is None:
            return doc, None
        return _exact_doc(doc, self._rebase(times[0]), times), None

    def events(self, view) -> tuple[list, Optional[tuple[list[int], int]]]:
        """A middle piece: `[` events `]`."""
        try:
            events = _typed(view, _EXACT_EVENTS if self.exact else _EVENTS)
            times = _exact_times(events) if self.exact else None
        except _FalseCut:
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
            self.rebase = _whole_second(ts_ns)
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
                raise _FalseCut(str(exc)) from None
            raise NotSplittable(str(exc)) from None
        if self.exact:  # rebased like the exact pieces (to the µs a double holds: this piece had other trouble)
            if self.rebase is None:
                known = [e.ts for e in decoded.doc.traceEvents if math.isfinite(e.ts) and abs(e.ts) < _USABLE_NS / 1000]
                self.rebase = int(min(known) * 1000) // 10**9 * 10**9 if known else None
            for e in decoded.doc.traceEvents:
                e.ts -= (self.rebase or 0) / 1000
        for reason, count in decoded.skipped.items():
            self.skipped[reason] = self.skipped.get(reason, 0) + count
        self.warnings.extend(w for w in decoded.warnings if w not in self.warnings)
        return decoded.doc, None if decoded.source_index is None else (decoded.source_index, decoded.total)


Offload = Callable[[Any, Piece, "_PieceDecoder"], None]  # (the piece's text `[`...`]`, where it lies, the file's decoder)


TextSink = Callable[[Any, Piece, Optional[int]], bool]  # (a middle piece's text `[`...`]`, where it lies, the file's
# `exact_rebase`) -> whether it took the piece
# (the tail's text: `[` events `]` and the rest of the document; where it lies; the file's `exact_rebase`; whether the
# rest, from an offset past the events' `]`, decodes as the whole tail's would) -> whether it took the tail's events
TailSink = Callable[[bytes, Piece, Optional[int], Callable[[int], bool]], bool]


def decode_chunks(blocks: Iterable, sink: EventSink, chunk_bytes: int, max_event_bytes: int = 1 << 62,
                  offload: Optional[Offload] = None, text_sink: Optional[TextSink] = None,
                  tail_sink: Optional[TailSink] = None) -> Decoded:
    """Decode a trace from a stream of byte blocks, handing events to `sink` one chunk at a time.

    Only one chunk of event structs exists at once, so memory stays near one chunk plus the sink's
    columns whatever the file size. Pieces are cut in place: the comma that ends a chunk becomes `]`
    and the whitespace byte before the next event becomes `[`, so middle pieces decode without copies.

    Args:
        blocks: the uncompressed text, in order: bytes-like blocks, a raw file object (read with readinto), or the
            whole text as a `MappedText` (cut in place: each cut's comma is overwritten).
        sink: called with (events, whether the chunk uses the 2021 "external id" spelling, its `Piece`), and when
            some of the piece's events were skipped, each kept event's index among them and their count.
        chunk_bytes: target chunk size.
        max_event_bytes: the longest text one event (with the whitespace around it) may have.
        offload: when given, middle pieces are not decoded here: each is handed over (its text is valid only during
            the call) to be decoded elsewhere with `decode_middle`, and the sink never sees them. The head and tail
            are decoded here. In a file with exact 16-digit times (one rebase shared by all pieces) the pieces before
            the first time are decoded here too: the rebase they set goes with every piece handed over.
        text_sink: when given (and not `offload`), each middle piece's text is offered to it first (valid only during the
            call, with the file's `exact_rebase`); a piece it takes is not decoded here (as for `offload`, in a file
            with exact times only once the rebase is known).
        tail_sink: when given, the tail's events are offered to it first (in a file of one piece, nearly all of them),
            with a check of the document after them; the rest is then decoded here (the sink never sees the tail).

    Returns:
        The top-level object (its `traceEvents` emptied: the events went to the sink), with the events
        skipped by reason and the warnings of pieces decoded leniently.

    Raises:
        NotSplittable: the stream does not fit the fast path; nothing useful was lost, decode it whole.
        EventTooLarge: one event's text is longer than `max_event_bytes`.
    """
    if isinstance(blocks, MappedText):  # the whole text in place: pieces are cut where it lies, nothing is read
        win = _Window.over(blocks.buf)
        blocks = win.advance(chunk_bytes)
    else:
        win = _Window(2 * chunk_bytes + min(chunk_bytes, 1 << 20))
        blocks = _blocks_into(win, blocks, chunk_bytes)
    top: Optional[TraceDoc] = None
    pieces: Optional[_PieceDecoder] = None
    ended = False
    while not ended:
        ended = next(blocks, None) is None
        if pieces is None:
            if len(win) < EXACT_SNIFF_BYTES and not ended:
                continue  # sniff the leading MiB, as the whole-file decode does, whatever the chunk size
            pieces = _PieceDecoder(needs_exact_times(win.buf, win.start, min(win.end, win.start + EXACT_SNIFF_BYTES)))
        if top is None:
            top = _take_head(win, sink, pieces)
            if top is None:
                if len(win) > HEAD_LIMIT:
                    raise NotSplittable("no traceEvents array near the start")
                if len(win) > max_event_bytes and win.buf.find(b'"traceEvents"', win.start, win.end) >= 0:
                    raise EventTooLarge("the first event")
                continue
        while len(win) >= chunk_bytes:
            if not _take_middle(win, sink, pieces, chunk_bytes, offload, text_sink):
                if len(win) > max_event_bytes:  # no boundary in the whole window: one event this long
                    raise EventTooLarge(f"at byte {win.base + win.start:,}")
                break
    if top is None or pieces is None:
        raise NotSplittable("no event boundary found")
    rest = bytes(win.buf[win.start:win.end])
    piece = Piece(PIECE_TAIL, win.base + win.start, win.base + win.end)
    tail = _scanned_tail(rest, piece, pieces, tail_sink) if tail_sink is not None else None
    if tail is None:
        try:
            tail, index = pieces.doc(b'{"traceEvents":' + rest)
        except _FalseCut as exc:  # the tail ends where the file does: it is cut short, unless a lone `"\ud800"` ends it
            if not rest[-64:].rstrip().endswith(b"}"):
                raise DecodeError(f"truncated JSON ({win.base + win.end:,} bytes; was the file still being written?)",
                                  transient=True) from None
            raise NotSplittable(str(exc)) from None
        sink(tail.traceEvents, rest.find(_LEGACY_KEY) != -1, piece, *(index or ()))
    for name in TraceDoc.__struct_fields__:
        if name != "traceEvents" and getattr(top, name) is None:
            setattr(top, name, getattr(tail, name))
    if pieces.exact:
        top.baseTimeNanoseconds = (top.baseTimeNanoseconds or 0) + (pieces.rebase or 0)
    return Decoded(top, skipped=pieces.skipped, warnings=pieces.warnings)


class _TailRest(TraceDoc, gc=False):
    """The document after the tail's events; a `traceEvents` key there (any spelling, any value) is a second one."""

    traceEvents: Any = msgspec.UNSET


_TAIL_REST = msgspec.json.Decoder(_TailRest)


def _scanned_tail(rest: bytes, piece: Piece, pieces: _PieceDecoder, tail_sink: TailSink) -> Optional[TraceDoc]:
    """The tail's document without its events when `tail_sink` took them; None when it did not (decode the tail)."""
    if pieces.exact and pieces.rebase is None:  # its times need the rebase a piece holding a time sets
        return None
    after: list[TraceDoc] = []

    def rest_decodes(end: int) -> bool:
        try:  # the typed decode of the whole tail succeeds exactly when its events and this part both do
            after.append(_typed(b'{"_":0' + rest[end:], _TAIL_REST))  # a placeholder member keeps its commas' grammar
        except NotSplittable:
            return False
        return after[-1].traceEvents is msgspec.UNSET  # a second array would replace the first (the last key wins)
    return after[0] if tail_sink(rest, piece, pieces.exact_rebase(), rest_decodes) else None


class MappedText(NamedTuple):
    """A whole uncompressed text `decode_chunks` may cut in place (a private, copy-on-write file mapping): pieces are
    views of it, never copies. A middle piece's bytes are [Piece.start, Piece.end): its closing `]` would be the next
    piece's `[`, so `offload` gets the piece with a `]` that lasts only during the call."""

    buf: Any


class EventTooLarge(NotSplittable):
    """One event's text (a string, a whitespace run) is longer than the budget allows; the message says where."""


def _blocks_into(win: _Window, source, chunk_bytes: int) -> Iterable[int]:
    """Feed the window from an iterable of blocks, or straight from a raw file (`readinto`, no copy)."""
    if hasattr(source, "readinto"):
        while True:
            got = win.read_from(source, chunk_bytes)
            if not got:
                return
            yield got
    for block in source:
        win.append(block)
        yield len(block)


class _FalseCut(NotSplittable):
    """A piece ended inside a string or a nested value: its cut was a look-alike, not a boundary."""


def _typed(piece, decoder):
    """Decode a piece of text; any error means the fast path cannot take it (`NotSplittable`).

    A piece cut inside a string or a nested object always reads as truncated (the closing `]` we add
    lands inside the open value): that error is a `_FalseCut`, so a caller may try another cut.
    """
    try:
        return decoder.decode(piece)
    except msgspec.DecodeError as exc:
        if "truncated" in str(exc):
            raise _FalseCut(str(exc)) from None
        raise NotSplittable(str(exc)) from None
    except MSGSPEC_REFUSALS as exc:  # bad UTF-8 (either class), a bad value
        raise NotSplittable(str(exc)) from None


MAX_FALSE_CUTS = 16  # look-alike cuts tried per piece before the file is decoded whole


def _take_head(win: _Window, sink: EventSink, pieces: _PieceDecoder) -> Optional[TraceDoc]:
    """Decode everything up to the end of the first event; None until that much has arrived."""
    buf = win.buf
    at = buf.find(b'"traceEvents"', win.start, win.end)
    key = _EVENTS_KEY.match(buf, at, win.end) if at >= 0 else None
    cuts = _CUT.finditer(buf, key.end(), win.end) if key else iter(())
    tried = 0
    for cut in itertools.islice(cuts, MAX_FALSE_CUTS):
        tried += 1
        comma = cut.start(1)
        try:
            head, index = pieces.doc(bytes(buf[win.start:comma]) + b"]}")
        except _FalseCut:
            continue
        sink(head.traceEvents, buf.find(_LEGACY_KEY, win.start, comma) != -1, Piece(PIECE_HEAD, win.base + win.start, win.base + comma),
             *(index or ()))
        head.traceEvents = []
        win.consume_to(comma)
        return head
    if tried == MAX_FALSE_CUTS:
        raise NotSplittable("no event boundary among the first cuts")
    return None  # all cuts so far were look-alikes: wait for more text


def _last_match(matches):
    """The last of an iterator of matches (None if empty), without keeping the others."""
    last = None
    for last in matches:  # noqa: B007 - the loop keeps only the final match
        pass
    return last


def _last_cut(buf, floor: int, hi: int):
    """The last boundary candidate in buf[floor:hi], searching backwards in widening windows."""
    window = 1 << 16  # events are rarely larger
    while True:
        lo = max(floor, hi - window)
        cut = _last_match(_CUT.finditer(buf, lo, hi))
        if cut is not None or lo <= floor:
            return cut
        window *= 8


def _take_middle(win: _Window, sink: EventSink, pieces: _PieceDecoder, chunk_bytes: int,
                 offload: Optional[Offload] = None, text_sink: Optional[TextSink] = None) -> bool:
    """Decode the events up to the last boundary within the window's first `chunk_bytes` (else the first
    boundary after them) and drop them from the window.

    The boundary's comma ends this piece as `]`, then starts the next one as `[`. A cut that turns out
    to lie inside a string or nested value is restored and the boundary before it is tried instead.
    """
    buf = win.buf
    hi = min(win.end, win.start + chunk_bytes)
    cut = _last_cut(buf, max(win.start + 1, win.searched), hi) if win.searched < hi else None
    if cut is None and hi < win.end:
        cut = _CUT.search(buf, max(hi, win.searched), win.end)
    if cut is None:
        win.searched = max(win.start, win.end - 64)  # a boundary may straddle the end: rescan its tail only
        return False
    shared = not pieces.exact or pieces.rebase is not None  # an exact piece elsewhere needs the file's rebase
    if offload is not None and shared:  # the decoder elsewhere reports a look-alike cut (`decode_middle`)
        comma = cut.start(1)
        buf[comma] = ord("]")
        with memoryview(buf) as view:
            offload(view[win.start:comma + 1], Piece(PIECE_MIDDLE, win.base + win.start, win.base + comma), pieces)
        win.consume_to(comma)
        return True
    if text_sink is not None and shared:  # a look-alike cut leaves text it refuses (an open string or value)
        comma = cut.start(1)
        buf[comma] = ord("]")
        with memoryview(buf) as view:
            taken = text_sink(view[win.start:comma + 1], Piece(PIECE_MIDDLE, win.base + win.start, win.base + comma),
                              pieces.exact_rebase())
        if taken:
            win.consume_to(comma)
            return True
        buf[comma] = ord(",")
    for _ in range(MAX_FALSE_CUTS):
        comma = cut.start(1)
        buf[comma] = ord("]")
        try:
            with memoryview(buf) as view:
                events, index = pieces.events(view[win.start:comma + 1])
        except _FalseCut:
            buf[comma] = ord(",")
            cut = _last_cut(buf, win.start + 1, cut.start())
            if cut is None:
                break
            continue
        sink(events, buf.find(_LEGACY_KEY, win.start, comma) != -1, Piece(PIECE_MIDDLE, win.base + win.start, win.base + comma),
             *(index or ()))
        del events
        win.consume_to(comma)
        return True
    raise NotSplittable("no event boundary among the last cuts of a chunk")


class FalseCut(NotSplittable):
    """An offloaded middle piece was cut inside a string or nested value: decode the file serially instead."""


def decode_middle(text, exact_rebase: Optional[int] = None
                  ) -> tuple[list[Event], bool, Optional[tuple[list[int], int]], dict[str, int], list[str]]:
    """Decode one middle piece (`[` events `]`, as `decode_chunks` hands it to `offload`) on its own; a piece of a file
    with exact 16-digit times (`exact_rebase`: its rebase, `_PieceDecoder.exact_rebase`) as the file's decoder would.

    Returns the events, whether the piece uses the 2021 "external id" spelling, the kept events' indices and the
    piece's event count when some were skipped (else None), and the skipped counts and warnings of this piece.

    Raises:
        FalseCut: the cut before or after the piece was a look-alike (the serial decode would try another).
        NotSplittable: the piece cannot be decoded on its own (the serial decode decodes such a file whole).
    """
    pieces = _PieceDecoder(exact_rebase is not None)
    pieces.rebase = exact_rebase
    try:
        events, index = pieces.events(text)
    except _FalseCut as exc:
        raise FalseCut(str(exc)) from None
    legacy = (text.obj if isinstance(text, memoryview) else text).find(_LEGACY_KEY, 0, len(text) - 1) != -1
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


def needs_exact_times(raw, start: int, end: int) -> bool:
    """Whether raw[start:end] holds a 16-digit time with a fraction (see `_SIXTEEN_DIGIT_FRACTION`)."""
    return _SIXTEEN_DIGIT_FRACTION.search(raw, start, end) is not None


def _kineto_ns(value: Any) -> Optional[int]:
    """A time written by Kineto as `{us}.{ns}` in integer ns: a fraction of up to 3 digits is the ns count
    (`.5` and `.005` are both 5 ns; the first is the unpadded writer of 2024-03). None if not a number."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value * 1000 if -10**31 < value < 10**31 else None  # as a Decimal past 30 digits: no 10^400 / 1000
    if not isinstance(value, Decimal) or not value.is_finite() or value.adjusted() > 30:  # no 1e999999 ints
        return None
    sign, digits, exponent = value.as_tuple()
    if -3 <= exponent < 0:
        whole = int("".join(map(str, digits[:exponent])) or "0")
        ns = whole * 1000 + int("".join(map(str, digits[exponent:])))
        return -ns if sign else ns
    return int((value * 1000).to_integral_value())


def _raw_ns(raw: Any) -> Optional[int]:
    """`_kineto_ns` of a time's JSON text (a `msgspec.Raw`; an empty one is an absent time: None).

    Raises:
        One of `deps.MSGSPEC_REFUSALS`: the time is a string of invalid UTF-8 (a Raw keeps its text unchecked), which
            the typed decode of the value itself refuses (UnicodeDecodeError before msgspec 0.23, DecodeError since).
    """
    if not isinstance(raw, msgspec.Raw) or not raw:
        return None
    return _kineto_ns(_EXACT_VALUE.decode(raw))


def _exact_times(events: list) -> tuple[list, list]:
    """The ts and dur of exact events in ns (`_ns_of`); NotSplittable where a piece's typed decode would have failed."""
    try:
        return _ns_of([e.ts for e in events]), _ns_of([e.dur for e in events])
    except MSGSPEC_REFUSALS as exc:
        raise NotSplittable(str(exc)) from None


def _exact_doc(doc: _ExactDoc, rebase: Optional[int] = None, times: Optional[tuple[list, list]] = None) -> TraceDoc:
    """Exact 16-digit times -> plain events, rebased to a whole second so doubles hold them to the ns.

    The rebase (by default the whole second before the earliest time) goes into `baseTimeNanoseconds`
    (which the model adds back), so absolute times are exact. A piece of a file passes the first piece's
    (and its events' ts and dur in ns, `_exact_times`).
    """
    if times is None:
        times = _ns_of([e.ts for e in doc.traceEvents]), _ns_of([e.dur for e in doc.traceEvents])
    if rebase is None:
        rebase = _whole_second(times[0]) or 0
        base = (doc.baseTimeNanoseconds or 0) + rebase
    else:
        base = doc.baseTimeNanoseconds  # the caller adds its rebase once
    top = {name: getattr(doc, name) for name in TraceDoc.__struct_fields__ if name != "traceEvents"}
    top["baseTimeNanoseconds"] = base
    return TraceDoc(traceEvents=_exact_events(doc.traceEvents, rebase, times), **top)


def _whole_second(ts_ns: list) -> Optional[int]:
    """The whole second (ns) at or before the earliest usable time (within ±2^62 ns, as the lenient decode's rebase
    and the model take them: one absurd time must not carry every other one out of range); None when there is none."""
    known = [t for t in ts_ns if t is not None and -_USABLE_NS < t < _USABLE_NS]
    return min(known) // 10**9 * 10**9 if known else None


def _exact_events(exact: list, rebase: int, times: tuple[list, list]) -> list[Event]:
    """Events with exact times as plain events, their times in µs after `rebase` ns (`times`: their ts and dur in
    ns)."""
    return [Event(ph=e.ph, name=e.name, cat=e.cat, pid=e.pid, tid=e.tid, id=e.id, args=e.args,
                  ts=NAN if t is None else (t - rebase) / 1000, dur=NAN if d is None else d / 1000)
            for e, t, d in zip(exact, *times)]


def _load_ns_reader() -> Callable[[list], list]:
    """`[_raw_ns(v) for v in values]`: read in C (`_columns.kineto_ns`) unless absent or disabled, every text it does
    not read itself handed to `_raw_ns`."""
    if not pure_python():
        try:
            from ._columns import kineto_ns
        except ImportError:
            pass
        else:
            return lambda values: kineto_ns(values, msgspec.Raw, _raw_ns)
    return lambda values: list(map(_raw_ns, values))


_ns_of = _load_ns_reader()


def _loads(text: str) -> Any:
    """`json.loads`, whose refusals of content (an integer literal of more digits than Python converts, 4,300 by
    default) are DecodeErrors naming the problem, like any other malformed text."""
    try:
        return json.loads(text, strict=False)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # "Exceeds the limit (4300 digits) for integer string conversion"
        raise DecodeError(f"invalid JSON: a number too long to read ({str(exc).split(';')[0]})") from None


def forgiving_json(raw: bytes, first_error: Exception) -> tuple[Any, list[str]]:
    """Second chance for text msgspec rejects: NaN/Infinity, control characters, bad UTF-8, bare N/A."""
    warnings: list[str] = []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", errors="replace")
        warnings.append(f"invalid UTF-8 at byte {exc.start} replaced with U+FFFD")
    try:
        doc = _loads(text)
    except json.JSONDecodeError:
        patched = _BARE_NA.sub(b'"N/A"', text.encode("utf-8"))
        try:
            doc = _loads(patched.decode("utf-8"))  # str: bytes would be sniffed as UTF-16
        except json.JSONDecodeError as exc:
            if exc.pos >= len(patched.rstrip()) - 1:
                raise DecodeError(f"truncated JSON ({len(raw)} bytes; was the file still being written?)", transient=True) from None
            raise DecodeError(f"invalid JSON: {first_error}") from None
        warnings.append("bare N/A tokens read as strings")
    if _SURROGATE_ESCAPE.search(raw):  # json keeps a lone `\ud800` as is; no encoder downstream would accept it
        doc = _scrub_surrogates(doc)
    return doc, warnings


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


def _scrub_surrogates(value: Any) -> Any:
    """The same JSON value with lone surrogates in its strings (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if isinstance(value, dict):
        return {_scrub_surrogates(k): _scrub_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_surrogates(v) for v in value]
    return value


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
