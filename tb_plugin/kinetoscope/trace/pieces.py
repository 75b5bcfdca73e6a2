"""Cutting a text into pieces as it streams: the reusable window, the cuts between events, and `decode_chunks`, which
hands each piece's events (or its text, to be decoded elsewhere) on as it goes."""
from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator
from typing import Any, Callable, NamedTuple, Optional

import msgspec

from .decode import LEGACY_KEY, PIECE_HEAD, PIECE_MIDDLE, PIECE_TAIL, Decoded, LookAlikeCut, NotSplittable, Piece, PieceDecoder, TraceDoc, typed
from .exact_times import EXACT_SNIFF_BYTES, needs_exact_times
from .forgiving import DecodeError

_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
# Two consecutive events are separated by `}`, whitespace, `,`, whitespace, `{`. The same bytes can occur
# inside a string or a nested object; a cut there leaves the neighbouring piece unbalanced (an open
# string or object), which the typed decode rejects, and the file is then decoded whole.
_CUT = re.compile(rb"\}[ \t\r\n]*(,)[ \t\r\n]*\{")
HEAD_LIMIT = 64 << 20  # a `traceEvents` key not found in this many leading bytes: decode the file whole
MAX_FALSE_CUTS = 16  # look-alike cuts tried per piece before the file is decoded whole
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


Offload = Callable[[Any, Piece, "PieceDecoder"], None]  # (the piece's text `[`...`]`, where it lies, the file's decoder)
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
    win, filled = _window(blocks, chunk_bytes)
    top, pieces = _take_events(win, filled, sink, chunk_bytes, max_event_bytes, offload, text_sink)
    tail = _take_tail(win, sink, pieces, tail_sink)
    for name in TraceDoc.__struct_fields__:
        if name != "traceEvents" and getattr(top, name) is None:
            setattr(top, name, getattr(tail, name))
    if pieces.exact:
        top.baseTimeNanoseconds = (top.baseTimeNanoseconds or 0) + (pieces.rebase or 0)
    return Decoded(top, skipped=pieces.skipped, warnings=pieces.warnings)


def _window(blocks, chunk_bytes: int) -> tuple[_Window, Iterator[int]]:
    """The window `decode_chunks` cuts the text in, and what fills it: each step, the count of bytes that arrived."""
    if isinstance(blocks, MappedText):  # the whole text in place: pieces are cut where it lies, nothing is read
        win = _Window.over(blocks.buf)
        return win, win.advance(chunk_bytes)
    win = _Window(2 * chunk_bytes + min(chunk_bytes, 1 << 20))
    return win, _blocks_into(win, blocks, chunk_bytes)


def _take_events(win: _Window, filled: Iterator[int], sink: EventSink, chunk_bytes: int, max_event_bytes: int,
                 offload: Optional[Offload], text_sink: Optional[TextSink]) -> tuple[TraceDoc, PieceDecoder]:
    """Take the head and the middle pieces as the text arrives (`decode_chunks`), leaving the tail in the window.

    Returns the top-level object before `traceEvents` (its events went to the sink) and the file's decoder.
    """
    top: Optional[TraceDoc] = None
    pieces: Optional[PieceDecoder] = None
    ended = False
    while not ended:
        ended = next(filled, None) is None
        if pieces is None:
            if len(win) < EXACT_SNIFF_BYTES and not ended:
                continue  # sniff the leading MiB, as the whole-file decode does, whatever the chunk size
            pieces = PieceDecoder(needs_exact_times(win.buf, win.start, min(win.end, win.start + EXACT_SNIFF_BYTES)))
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
    return top, pieces


def _take_tail(win: _Window, sink: EventSink, pieces: PieceDecoder, tail_sink: Optional[TailSink]) -> TraceDoc:
    """Take the tail (the text left in the window: the last events and the rest of the document): its events go to
    `tail_sink` when it takes them, else they are decoded here and go to the sink. Returns the document after them."""
    rest = bytes(win.buf[win.start:win.end])
    piece = Piece(PIECE_TAIL, win.base + win.start, win.base + win.end)
    tail = _scanned_tail(rest, piece, pieces, tail_sink) if tail_sink is not None else None
    if tail is None:
        try:
            tail, index = pieces.doc(b'{"traceEvents":' + rest)
        except LookAlikeCut as exc:  # the tail ends where the file does: it is cut short, unless a lone `"\ud800"` ends it
            if not rest[-64:].rstrip().endswith(b"}"):
                raise DecodeError(f"truncated JSON ({win.base + win.end:,} bytes; was the file still being written?)",
                                  transient=True) from None
            raise NotSplittable(str(exc)) from None
        sink(tail.traceEvents, rest.find(LEGACY_KEY) != -1, piece, *(index or ()))
    return tail


class _TailRest(TraceDoc, gc=False):
    """The document after the tail's events; a `traceEvents` key there (any spelling, any value) is a second one."""

    traceEvents: Any = msgspec.UNSET


_TAIL_REST = msgspec.json.Decoder(_TailRest)


def _scanned_tail(rest: bytes, piece: Piece, pieces: PieceDecoder, tail_sink: TailSink) -> Optional[TraceDoc]:
    """The tail's document without its events when `tail_sink` took them; None when it did not (decode the tail)."""
    if pieces.exact and pieces.rebase is None:  # its times need the rebase a piece holding a time sets
        return None
    after: list[TraceDoc] = []

    def rest_decodes(end: int) -> bool:
        try:  # the typed decode of the whole tail succeeds exactly when its events and this part both do
            after.append(typed(b'{"_":0' + rest[end:], _TAIL_REST))  # a placeholder member keeps its commas' grammar
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


def _take_head(win: _Window, sink: EventSink, pieces: PieceDecoder) -> Optional[TraceDoc]:
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
        except LookAlikeCut:
            continue
        sink(head.traceEvents, buf.find(LEGACY_KEY, win.start, comma) != -1, Piece(PIECE_HEAD, win.base + win.start, win.base + comma),
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


def _take_middle(win: _Window, sink: EventSink, pieces: PieceDecoder, chunk_bytes: int,
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
        except LookAlikeCut:
            buf[comma] = ord(",")
            cut = _last_cut(buf, win.start + 1, cut.start())
            if cut is None:
                break
            continue
        sink(events, buf.find(LEGACY_KEY, win.start, comma) != -1, Piece(PIECE_MIDDLE, win.base + win.start, win.base + comma),
             *(index or ()))
        del events
        win.consume_to(comma)
        return True
    raise NotSplittable("no event boundary among the last cuts of a chunk")
