"""Remote logdirs (`s3://`, `gs://`, `abfs://`, `hdfs://`, any fsspec URL): options, read-ahead and errors.

- Credentials and endpoints come from where each backend looks for them (AWS_* variables such as
  AWS_ENDPOINT_URL and ~/.aws for S3, GOOGLE_APPLICATION_CREDENTIALS for GCS, AZURE_STORAGE_* for Azure,
  fsspec's own config files and FSSPEC_<PROTOCOL>_<OPTION> variables), and from the storage options
  given explicitly (`--kinetoscope_storage_options`, `kinetoscope report --storage-options`), which travel
  to the decoder processes as the KINETOSCOPE_STORAGE_OPTIONS variable (a JSON object; `@FILE` reads it
  from a file, which keeps secrets out of the process list).
- Reads stream: a whole trace is read in order, in ranged requests of 8 MiB made by a background thread
  that stays at most KINETOSCOPE_READ_AHEAD_BYTES (32 MiB by default) ahead of the decoder, so the transfer
  overlaps the decoding and nothing is staged on disk; a byte range (an event's args, a sniff) is one
  ranged request for exactly its bytes.
- Every failure becomes a message that names the problem (no such file or bucket, access denied, the
  endpoint cannot be reached, no backend installed) with every known secret replaced by `***`: the values
  of the storage options under secret-looking keys, the same variables of the environment, and the
  user:password of a URL. Network waits are bounded (S3: 5 s to connect, 20 s to read, 3 attempts,
  unless the options or AWS_MAX_ATTEMPTS / AWS_RETRY_MODE say otherwise).
"""
from __future__ import annotations

import io
import json
import os
import queue
import re
import threading
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Optional
from urllib.parse import quote, quote_plus

from .budgets import in_environment, setting

OPTIONS_ENV = "KINETOSCOPE_STORAGE_OPTIONS"
READ_AHEAD_ENV = "KINETOSCOPE_READ_AHEAD_BYTES"
READ_CHUNK_BYTES = 8 << 20  # one request of a streamed read (S3's own multipart guidance: 8-16 MiB)
DEFAULT_READ_AHEAD = 32 << 20  # fetched ahead of the decoder at most: 4 requests in flight or waiting
MAX_MESSAGE_CHARS = 400
# The protocols a `{"s3": {...}, "gs": {...}}` options object may be keyed by.
PROTOCOLS = ("s3", "s3a", "gs", "gcs", "abfs", "abfss", "az", "adl", "hdfs", "webhdfs", "http", "https", "sftp",
             "ftp", "memory", "file")
EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "abfs": "azure", "abfss": "azure", "az": "azure",
          "adl": "azure", "hdfs": "hdfs"}
# Option keys and environment variables whose values are secrets (never shown).
SECRET_KEY_RE = re.compile(r"key|secret|token|passw|credential|sas|signature|connection_string|auth|session|cert",
                           re.IGNORECASE)
SECRET_ENV_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_", "GCS", "GCLOUD", "FSSPEC_", "HDFS", "KRB5", "WEBHDFS")
# Every pattern here runs in linear time, whatever the text (an error may quote a 1 MB request parameter): each
# repeated class starts only where a run of its characters starts (the lookbehind excludes the class itself), so the
# engine scans each run once from its start instead of once from every character in it (which was quadratic: 4 s of
# CPU, holding the GIL, for one 60,000-letter parameter). A scheme is the whole run of scheme characters before
# `://`, so `9abc://u:p@h` hides `u:p` as before.
URL_USERINFO_RE = re.compile(r"(?<![a-zA-Z0-9+.-])(?P<scheme>[a-zA-Z0-9+.-]+://)[^/\s@?#]+@")  # user:pass@ and token@
# The same without a scheme, as some backends quote it ("bucket user:password@bucket"): name:secret@host.
BARE_USERINFO_RE = re.compile(r"(?<![\w.~%!$&'()*+,;=-])[\w.~%!$&'()*+,;=-]+:[^\s/@:'\"]+@(?=[\w.-])")
INLINE_SECRET_RE = re.compile(r"(?P<name>AccountKey|SharedAccessSignature|sig|X-Amz-Signature|X-Amz-Credential|"
                              r"X-Amz-Security-Token|password|secret|token)=[^;&\s\"']+", re.IGNORECASE)
MIN_SECRET_CHARS = 4  # shorter values would blank out ordinary words
MAX_REDACTED_CHARS = 4096  # of a text `redact` returns: what an error or a log line quotes beyond it is cut
# S3 defaults that bound one request's time; options given by the user win.
S3_CONFIG = {"connect_timeout": 5, "read_timeout": 20}
S3_RETRIES = {"max_attempts": 3, "mode": "standard"}


class OptionsError(ValueError):
    """Storage options that are not a JSON object (the message never quotes them: they may hold secrets)."""


def parse_options(text: Optional[str]) -> dict[str, Any]:
    """The storage options from their JSON text (`@FILE`: the file's content); {} for None or empty.

    Raises:
        OptionsError: not readable, not JSON, or not an object.
    """
    if text is None or not text.strip():
        return {}
    text = text.strip()
    if text.startswith("@"):
        try:
            with open(os.path.expanduser(text[1:]), encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise OptionsError(f"cannot read the storage options file {text[1:]!r}: {exc.strerror or exc}") from None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise OptionsError("storage options must be a JSON object (not shown here: it may hold credentials)") from None
    if not isinstance(value, dict):
        raise OptionsError(f"storage options must be a JSON object, not a JSON {type(value).__name__}")
    return value


@lru_cache(maxsize=8)
def _options_from_env(text: Optional[str]) -> dict[str, Any]:
    try:
        return parse_options(text)
    except OptionsError:
        return {}  # validated where it was set (flag, option); a hand-set bad value counts as none


def configured_options() -> dict[str, Any]:
    """The explicit storage options in force (from KINETOSCOPE_STORAGE_OPTIONS)."""
    return _options_from_env(os.environ.get(OPTIONS_ENV))


def options_for(protocol: str) -> dict[str, Any]:
    """The keyword arguments for the filesystem of `protocol`: our bounded defaults, then the options.

    The options object is either flat (for any remote protocol) or keyed by protocol
    (`{"s3": {...}, "gs": {...}}`); listings are never cached (a logdir is rescanned to see new traces).
    """
    if protocol in ("file", "local"):
        return {}
    given = configured_options()
    keyed = {k: v for k, v in given.items() if k in PROTOCOLS and isinstance(v, dict)}
    own = dict(keyed.get(protocol) or (keyed.get("s3") if protocol == "s3a" else None) or {})
    flat = {k: v for k, v in given.items() if k not in keyed}
    kwargs: dict[str, Any] = {"use_listings_cache": False, **flat, **own}
    if protocol in ("s3", "s3a"):
        config = dict(S3_CONFIG)
        if not (os.environ.get("AWS_MAX_ATTEMPTS") or os.environ.get("AWS_RETRY_MODE")):
            config["retries"] = dict(S3_RETRIES)
        config.update(kwargs.get("config_kwargs") or {})
        kwargs["config_kwargs"] = config
    return kwargs


def read_ahead_bytes() -> int:
    """How far past a read a streamed remote file is fetched (KINETOSCOPE_READ_AHEAD_BYTES)."""
    return int(setting(READ_AHEAD_ENV, DEFAULT_READ_AHEAD))


def open_remote(fs, inner: str, ranged: bool):
    """A binary handle on a remote file: each read one request for exactly the bytes asked (`ranged`), or
    a `Prefetcher` streaming it in order with a bounded read-ahead."""
    try:
        handle = fs.open(inner, "rb", block_size=READ_CHUNK_BYTES, cache_type="none")
    except TypeError:  # a backend whose open takes no cache options (pyarrow's HDFS)
        handle = fs.open(inner, "rb")
    return handle if ranged else Prefetcher(handle, READ_CHUNK_BYTES, read_ahead_bytes())


class Prefetcher(io.RawIOBase):
    """Reads a file in order on a background thread, `chunk_bytes` per request, at most `ahead_bytes`
    ahead of the reader (a bounded queue), so fetching the next chunks overlaps the work on this one.

    Offers what the storage layer uses of a handle: read, readinto, size, close, and seek back within the
    chunk being read (the gzip sniff reads 2 bytes and seeks to 0). A failed fetch is raised by the read
    that reaches it.
    """

    def __init__(self, handle, chunk_bytes: int, ahead_bytes: int) -> None:
        super().__init__()
        self._handle = handle
        self._chunk_bytes = max(1, chunk_bytes)
        self.size = int(getattr(handle, "size", 0) or 0)
        self._queue: queue.Queue = queue.Queue(maxsize=max(1, ahead_bytes // self._chunk_bytes))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._chunk, self._chunk_start, self._pos, self._eof = b"", 0, 0, False

    def readable(self) -> bool:
        return True

    def _fetch(self) -> None:
        try:
            while not self._stop.is_set():
                data = self._handle.read(self._chunk_bytes)
                self._put(data)
                if not data:
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the reader, who raises it
            self._put(exc)

    def _put(self, item) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def _next_chunk(self) -> bool:
        if self._eof:
            return False
        if self._thread is None:
            self._thread = threading.Thread(target=self._fetch, name="kinetoscope-prefetch", daemon=True)
            self._thread.start()
        item = self._queue.get()
        if isinstance(item, BaseException):
            self._eof = True
            raise item
        self._chunk_start += len(self._chunk)
        self._chunk = item
        self._eof = not item
        return bool(item)

    def readinto(self, buffer) -> int:
        view = memoryview(buffer).cast("B")
        offset = self._pos - self._chunk_start
        while offset >= len(self._chunk):
            if not self._next_chunk():
                return 0
            offset = self._pos - self._chunk_start
        n = min(len(view), len(self._chunk) - offset)
        view[:n] = self._chunk[offset:offset + n]
        self._pos += n
        return n

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            return self.readall()
        buffer = bytearray(size)
        n = self.readinto(buffer)
        return bytes(buffer[:n])

    def readall(self) -> bytes:
        parts = [self._chunk[self._pos - self._chunk_start:]]
        while self._next_chunk():
            parts.append(self._chunk)
        self._pos = self._chunk_start + len(self._chunk)
        return b"".join(parts)

    def seek(self, pos: int, whence: int = 0) -> int:
        if whence != 0 or not self._chunk_start <= pos <= self._chunk_start + len(self._chunk):
            raise io.UnsupportedOperation("a streamed remote file seeks only within the chunk being read")
        self._pos = pos
        return pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        if not self.closed:
            self._stop.set()
            if self._thread is not None:
                self._thread.join(timeout=30)
            self._handle.close()
        super().close()


@contextmanager
def options_in_env(text: Optional[str]):
    """Storage options (JSON text, already validated) in force for the block, as the variable the storage
    layer and decoder processes read; the variable is restored after."""
    with in_environment({} if text is None else {OPTIONS_ENV: json.dumps(parse_options(text))}):
        yield


# ---- secrets and errors -------------------------------------------------------------------------

def _secret_values(value: Any, secret: bool = False) -> list[str]:
    """The strings under secret-looking keys of an options object, at any depth."""
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _secret_values(v, secret or bool(SECRET_KEY_RE.search(str(k))))]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _secret_values(v, secret)]
    if secret and isinstance(value, (str, int)) and not isinstance(value, bool):
        return [str(value)]
    return []


def secrets() -> list[str]:
    """Every secret this process knows of, longest first."""
    found = set(_secret_values(configured_options()))
    for name, value in os.environ.items():
        if name != OPTIONS_ENV and name.upper().startswith(SECRET_ENV_PREFIXES) and SECRET_KEY_RE.search(name):
            found.add(value)
    return sorted((s for s in found if len(s) >= MIN_SECRET_CHARS), key=len, reverse=True)


def redact(text: str, limit: int = MAX_REDACTED_CHARS) -> str:
    """`text` with every known secret (as given and URL-quoted), URL userinfo (with or without its scheme) and
    inline signature replaced by `***`; past `limit` characters cut (`cut_text`), so the patterns' time is bounded
    whatever the text (a 400 may quote a 1 MB parameter): the known secrets are replaced in the whole text first."""
    for value in secrets():
        for form in dict.fromkeys((value, quote(value, safe=""), quote_plus(value))):
            text = text.replace(form, "***")
    text = cut_text(text, limit)
    text = URL_USERINFO_RE.sub(lambda m: m.group("scheme") + "***@", text)
    text = BARE_USERINFO_RE.sub("***@", text)
    return INLINE_SECRET_RE.sub(lambda m: m.group("name") + "=***", text)


_BLANKS = " \t\n\r\f\v"


def cut_text(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters at a token's end, saying how much is not shown. A token the cut
    would split is left out whole: its head could be a secret's start that no pattern recognises once cut."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    if not text[limit].isspace():
        head = head[:max(map(head.rfind, _BLANKS)) + 1]
    return f"{head}\u2026 ({len(text) - len(head):,} characters not shown)"


def credentials_in_url(url: str) -> Optional[str]:
    """Why a logdir URL is refused when it carries credentials (`s3://user:password@bucket/...`, a token as
    its user), else None. A logdir is shown in logs, errors, reports and TensorBoard's /data/environment:
    credentials belong in the storage options or the backend's own places."""
    for part in url.split("::"):
        if "://" not in part:
            continue
        authority = part.split("://", 1)[1].split("/", 1)[0]
        if "@" in authority:
            return (f"the logdir URL {redact(url)} carries credentials: refused (a logdir is shown in logs, errors "
                    f"and TensorBoard's /data/environment). Give them as storage options "
                    f"(--kinetoscope_storage_options or --storage-options, @FILE keeps them off the command line) or "
                    f"where the backend looks for them (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or ~/.aws for S3, "
                    f"GOOGLE_APPLICATION_CREDENTIALS for GCS, AZURE_STORAGE_* for Azure)")
    return None


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


UNREACHABLE = {"EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError", "ConnectionClosedError",
               "ClientConnectorError", "ClientConnectionError", "ServerDisconnectedError", "ServerTimeoutError",
               "FSTimeoutError", "TimeoutError", "ConnectionError", "ProxyConnectionError", "SSLError", "gaierror"}
NO_CREDENTIALS = {"NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError",
                  "DefaultCredentialsError", "ClientAuthenticationError"}


def describe(exc: BaseException, protocol: str = "") -> tuple[str, bool]:
    """(what went wrong, for a person; whether trying again later may succeed) for an exception raised by
    fsspec or its backend (botocore, aiohttp, google-auth, azure, pyarrow), with its secrets redacted."""
    names = _names(exc)
    detail = redact(" ".join(str(exc).split()))[:MAX_MESSAGE_CHARS]
    if isinstance(exc, ImportError) or (isinstance(exc, ValueError) and "Protocol not known" in str(exc)):
        extra = EXTRAS.get(protocol)
        hint = f"pip install 'kinetoscope[{extra}]'" if extra else "install the fsspec backend for it"
        return f"no filesystem for {protocol or 'this URL'}:// is installed ({hint}): {detail}", False
    if names & NO_CREDENTIALS:
        return (f"no usable credentials ({detail}); set them in the environment, the backend's config files, or "
                f"the storage options"), True
    if isinstance(exc, FileNotFoundError) or "NoSuchBucket" in detail or "NoSuchKey" in detail:
        return f"no such file, folder or bucket ({detail or type(exc).__name__})", True
    if isinstance(exc, PermissionError) or "AccessDenied" in detail or "Forbidden" in detail:
        return f"access denied ({detail or type(exc).__name__}); check the credentials and their permissions", True
    if names & UNREACHABLE or isinstance(exc, (ConnectionError, TimeoutError)):
        return f"cannot reach the storage endpoint ({detail or type(exc).__name__})", True
    if isinstance(exc, OSError):
        return detail or type(exc).__name__, True
    if isinstance(exc, TypeError) and ("argument" in detail or "keyword" in detail):
        return f"storage options the {protocol or 'storage'} backend does not take ({detail})", False
    return f"{type(exc).__name__}: {detail}", "ClientError" in names or "HTTPError" in names
