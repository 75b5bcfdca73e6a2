"""Typed errors that carry their HTTP status; the plugin turns each into `{"error": {"code", "message"}}`.

Handlers raise these (the werkzeug `HTTPException` idea) instead of building error responses, so the
`*_impl` functions stay plain and testable and every error body has the same shape.
"""
from __future__ import annotations

import logging
import threading
import traceback
from typing import Any, Optional

from ..trace.remote import redact

log = logging.getLogger(__name__)
LOG_LINE_CHARS = 32_768  # a logged error keeps its traceback (redact's default cut is for what is answered)
_logged: set = set()
_logged_lock = threading.Lock()


def log_once(key: Any, message: str, *args: Any, exc_info: bool = False) -> None:
    """Log an error the first time `key` occurs; repeats (a client polling a broken route) go to debug. The
    line, traceback included, is redacted (`remote.redact`): a URL's password or a storage secret in an
    exception's text never reaches TensorBoard's log."""
    with _logged_lock:
        first = key not in _logged
        _logged.add(key)
    level = logging.ERROR if first else logging.DEBUG
    if not log.isEnabledFor(level):
        return
    text = message % args if args else message
    if exc_info and first:
        text += "\n" + traceback.format_exc().rstrip()
    log.log(level, "%s", redact(text, LOG_LINE_CHARS))


class PluginError(Exception):
    """Base of every error a route may answer with; `message` is safe to show to the user."""

    http_code = 500

    def __init__(self, message: str) -> None:
        message = redact(message)  # whatever it quotes (a storage error, a URL), no credential is answered
        super().__init__(message)
        self.message = message

    def body(self) -> dict[str, Any]:
        """The JSON body of the error response."""
        return {"error": {"code": self.http_code, "message": self.message}}

    def headers(self) -> list[tuple[str, str]]:
        """Extra response headers (none by default)."""
        return []


class BadRequest(PluginError):
    """A missing or malformed parameter; the message quotes it."""

    http_code = 400


class NotFound(PluginError):
    """An unknown run, span, device, row or path."""

    http_code = 404


class MethodNotAllowed(PluginError):
    """Every route answers GET only."""

    http_code = 405

    def __init__(self, method: str, allowed: tuple[str, ...] = ("GET",)) -> None:
        super().__init__(f"method {method!r} not allowed; use {', '.join(allowed)}")
        self.allowed = allowed

    def headers(self) -> list[tuple[str, str]]:
        return [("Allow", ", ".join(self.allowed))]


class NotReady(PluginError):
    """The span is queued or loading; the client retries (the body says which state, and progress)."""

    http_code = 409

    def __init__(self, span_id: str, state: str, progress: Optional[float] = None) -> None:
        super().__init__(f"trace {span_id} is {state}; retry shortly")
        self.state = state
        self.progress = progress

    def body(self) -> dict[str, Any]:
        body = super().body()
        body["state"] = self.state
        body["progress"] = self.progress
        return body


class TraceFailed(PluginError):
    """The trace could not be loaded; the message is the loader's (it names the file and the problem)."""

    http_code = 422


class Busy(PluginError):
    """A costly route's slots are all taken for longer than its wait: the client retries (no thread is held)."""

    http_code = 503

    def headers(self) -> list[tuple[str, str]]:
        return [("Retry-After", "2")]


class InternalError(PluginError):
    """Anything unexpected: the body stays generic, details go to the server log only."""

    http_code = 500

    def __init__(self) -> None:
        super().__init__("internal error; see the TensorBoard log")
