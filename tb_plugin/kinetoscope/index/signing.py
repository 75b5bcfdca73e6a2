"""Who wrote a sidecar: every sidecar's header carries an HMAC-SHA256 under a key its writer holds, and a reader
uses a sidecar only when it holds that key.

The other checks (`header.check_header`, the sections' checksums and caps, the strict npz reader, the column
validation) make sure a sidecar never disagrees with its trace by accident, staleness, truncation or a copy.
They cannot catch a sidecar forged with this very encoder for the trace's exact bytes with other figures: its
checksums are all right. The signature closes that: a sidecar is believed only if it was written by someone
holding a key the reader trusts, as a package manager trusts a binary cache only under a key it was given.

Keys are files outside the logdir (a logdir's writers never choose them):
- `KINETOSCOPE_SIDECAR_KEY_FILE`: one or more key files, separated by `os.pathsep`. The first signs what
  this process writes; all are trusted when reading (a personal key and a team's, say).
- otherwise `$XDG_CONFIG_HOME/kinetoscope/sidecar.key` (`~/.config/...`), which the first `index` makes
  (32 random bytes, hex, mode 0600).
A reader without any key file uses no sidecar (it decodes, and says why). The header holds the key's id
(the first 16 hex digits of its sha256), never the key.

What is signed is the header in its canonical encoding without the signature: the versions, the trace's
identity and sha256, and each section's size and sha256, so every byte a reader uses is covered.
"""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import re
import secrets
import stat
import threading
from collections.abc import Iterator
from typing import Any, Optional

from ..trace.storage import contained, is_remote, real_root

KEY_ENV = "KINETOSCOPE_SIDECAR_KEY_FILE"
MIN_KEY_BYTES = 16  # a key file shorter than this is refused (not a key anyone meant)
MAX_KEY_BYTES = 4096

_lock = threading.Lock()
_cache: dict[str, tuple[tuple[int, int, int], bytes]] = {}  # key file -> ((dev, ino, mtime_ns), key)
_extra: list[bytes] = []  # keys handed in by the caller (`using`): an index task gets its driver's key
_logdirs: set[str] = set()  # real paths of the logdirs this process reads or indexes (`refuse_inside`)


class SigningKeyError(Exception):
    """A key file that cannot be used (named in the message)."""


def key_files() -> list[str]:
    """The key files in force: KINETOSCOPE_SIDECAR_KEY_FILE's entries, else the per-user default."""
    named = [p for p in os.environ.get(KEY_ENV, "").split(os.pathsep) if p.strip()]
    if named:
        return [os.path.expanduser(p) for p in named]
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return [os.path.join(config, "kinetoscope", "sidecar.key")]


def key_id(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()[:16]


def refuse_inside(roots: Any) -> None:
    """Refuse, from now on, key files that lie inside these folders (the logdirs this process serves or indexes):
    whoever may write a logdir could read the key there and sign a forgery, or put their own key in its place."""
    with _lock:
        _logdirs.update(real_root(r) for r in roots if isinstance(r, str) and r and not is_remote(r))
        _cache.clear()


def _inside_a_logdir(path: str) -> Optional[str]:
    real = os.path.realpath(path)
    with _lock:
        return next((d for d in _logdirs if contained(real, [d])), None)


def _read_key(path: str) -> Optional[bytes]:
    """The key in a key file, None when there is none (cached while the file is unchanged).

    Raises:
        SigningKeyError: the file exists but is no regular file, or holds no usable key.
    """
    logdir = _inside_a_logdir(path)
    if logdir is not None and os.path.lexists(path):
        raise SigningKeyError(f"sidecar key file {path} lies inside the logdir {logdir}: not used (keep it outside, "
                              f"e.g. in ~/.config/kinetoscope)")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SigningKeyError(f"sidecar key file {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SigningKeyError(f"sidecar key file {path} is not a regular file")
        if st.st_mode & 0o022:  # anyone else who can write it can swap in their key: sign and trust nothing with it
            raise SigningKeyError(f"sidecar key file {path} is writable by others (mode {stat.S_IMODE(st.st_mode):o}): "
                                  f"not used; chmod 600 it")
        stamp = (st.st_dev, st.st_ino, st.st_mtime_ns)
        with _lock:
            hit = _cache.get(path)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        raw = os.read(fd, MAX_KEY_BYTES + 1)
    finally:
        os.close(fd)
    key = raw.strip()
    if len(key) < MIN_KEY_BYTES or len(raw) > MAX_KEY_BYTES:
        raise SigningKeyError(f"sidecar key file {path} holds no usable key ({MIN_KEY_BYTES} to {MAX_KEY_BYTES} bytes)")
    with _lock:
        _cache[path] = (stamp, key)
    return key


def trusted_keys() -> dict[str, bytes]:
    """{key id: key} of every key this process trusts; unreadable key files are skipped (`signing_key` names them)."""
    keys = {}
    for path in key_files():
        try:
            key = _read_key(path)
        except SigningKeyError:
            continue
        if key is not None:
            keys[key_id(key)] = key
    for key in list(_extra):
        keys[key_id(key)] = key
    return keys


def signing_key(create: bool = True) -> bytes:
    """The key this process signs with: the one handed in (`using`), else the first key file's, made when
    missing (`create`).

    Raises:
        SigningKeyError: no key and none could be made, or the key file is unusable.
    """
    if _extra:
        return _extra[0]
    path = key_files()[0]
    key = _read_key(path)
    if key is not None:
        return key
    if not create:
        raise SigningKeyError(f"no sidecar key file ({path})")
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32) + "\n")
    except FileExistsError:
        pass  # another process made it meanwhile: read theirs
    except OSError as exc:
        raise SigningKeyError(f"cannot make the sidecar key file {path}: {exc.strerror}") from None
    key = _read_key(path)
    if key is None:
        raise SigningKeyError(f"cannot read the sidecar key file {path}")
    return key


@contextlib.contextmanager
def using(key: Optional[bytes]) -> Iterator[None]:
    """Sign with `key` (and trust it) inside the block: an index task signs with its driver's key wherever it
    runs (a Dask worker on another machine holds no key file of the driver's)."""
    if not key:
        yield
        return
    with _lock:
        _extra.insert(0, bytes(key))
    try:
        yield
    finally:
        with _lock:
            _extra.remove(bytes(key))


def sign(signed: bytes, key: Optional[bytes] = None) -> dict:
    """The signature of the bytes `signed` (a header's canonical encoding) under `key` (default: `signing_key()`)."""
    key = signing_key() if key is None else key
    return {"key": key_id(key), "hmac": hmac.new(key, signed, hashlib.sha256).hexdigest()}


def unsigned_reason(sig: object, signed: bytes) -> Optional[str]:
    """None when `sig` is a valid signature of the bytes `signed` under a trusted key, else why the sidecar is
    not believed."""
    if not isinstance(sig, dict) or not isinstance(sig.get("key"), str) or not isinstance(sig.get("hmac"), str):
        return "unsigned sidecar (no writer signature): not believed"
    kid, mac = sig["key"], sig["hmac"]
    if not re.fullmatch(r"[0-9a-f]{16}", kid) or not re.fullmatch(r"[0-9a-f]{64}", mac):
        return "corrupt sidecar signature"
    key = trusted_keys().get(kid)
    if key is None:  # the key files are not named: the reason reaches a browser (`status`), their paths name a home
        return (f"sidecar signed with key {kid}, which this reader does not hold (set {KEY_ENV} to the key file of "
                f"whoever indexed the logdir): not believed")
    if not hmac.compare_digest(hmac.new(key, signed, hashlib.sha256).hexdigest(), mac):
        return f"sidecar signature does not match its content (key {kid}): edited after it was written"
    return None
