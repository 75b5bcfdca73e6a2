"""The TensorBoard plugin: a literal route table, parameter parsing, and JSON responses.

Each `*_route` parses and validates its query string, calls the matching `routes.*_impl`, and returns
plain data; the `_route` decorator turns that data, or a raised PluginError, into a response.
"""
from __future__ import annotations

import functools
import importlib.resources
import os
import posixpath
import re
import threading
from typing import Any, Callable, Optional

import msgspec
import numpy as np
from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from .. import pipeline
from ..analysis.idle.gpu_idle import CAUSE_NAMES
from ..analysis.tables.annotations import SCOPES, SIDES
from ..analysis.tables.kernel_sequences import MAX_LEN, MAX_TOP
from ..analysis.tables.search import MAX_QUERY_CHARS
from ..analysis.whatif.edits import MAX_EDITS
from ..analysis.whatif.replay import MAX_WHATIF_STEPS
from ..index.readers import AnalysesCache, SidecarIndex
from ..views.gaps_stalls import GAP_SORTS
from ..views.profiler_tables import MAX_LIMIT, MAX_SEARCH_LIMIT, TABLE_GROUPS, TABLE_KINDS, TABLE_SORTS, TABLE_SPLITS
from . import replays, routes
from .bundle import BundleError, bundle
from .compare_route import compare_impl
from .errors import BadRequest, InternalError, MethodNotAllowed, NotFound, PluginError, log_once
from .service import TraceService
from .static_files import STATIC_TYPES, read_static, static_parts

JSON = "application/json"
SPAN_RE = re.compile(r"^[0-9a-f]{12}$")
NAME_KEY_RE = re.compile(r"^[0-9a-f]{16}$")  # a table row's name_key (analysis/tables.name_key)
MAX_US = 1e15  # ~30 years: keeps every time parameter far inside int64 nanoseconds


# The first trace of the logdir starts loading when TensorBoard asks whether the plugin is active, so it
# decodes while TensorBoard's own page loads ("0" turns this off).
PRELOAD_ENV = "KINETOSCOPE_PRELOAD_FIRST"
MAX_STATUS_WAIT_MS = 3000  # a status long poll holds one server thread at most this long


def _enc_hook(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise NotImplementedError(f"cannot encode {type(value).__name__}")


def _json(request: wrappers.Request, payload: Any, code: int = 200, headers=None) -> wrappers.Response:
    """Encode with msgspec (ten times faster than json.dumps on big columnar bodies; NaN becomes null)."""
    return http_util.Respond(request, msgspec.json.encode(payload, enc_hook=_enc_hook), JSON, code=code, headers=headers)


def _route(handler: Callable[[Any, wrappers.Request], Any]) -> Callable:
    """GET only; data becomes JSON, a PluginError its JSON error, anything else a generic 500."""

    @wrappers.Request.application
    @functools.wraps(handler)
    def app(self, request: wrappers.Request) -> wrappers.Response:
        try:
            if request.method != "GET":
                raise MethodNotAllowed(request.method)
            result = handler(self, request)
            return result if isinstance(result, wrappers.Response) else _json(request, result)
        except PluginError as exc:
            return _json(request, exc.body(), code=exc.http_code, headers=exc.headers())
        except Exception:  # noqa: BLE001 - the one place that turns bugs into a generic 500
            log_once(("route", handler.__name__), "kinetoscope: %s failed", request.path, exc_info=True)
            error = InternalError()
            return _json(request, error.body(), code=error.http_code)

    return app


# ---- parameters ---------------------------------------------------------------------------------

def _raw(args, name: str, required: bool) -> Optional[str]:
    value = args.get(name)
    if value is None or value == "":
        if required:
            raise BadRequest(f"missing parameter {name!r}")
        return None
    return value


MAX_RUN_NAME = 4096  # a run is a folder path relative to the logdir


def run_arg(args) -> str:
    value = _raw(args, "run", required=True)
    if len(value) > MAX_RUN_NAME:
        raise BadRequest(f"run must be a run name from `runs` (at most {MAX_RUN_NAME} characters), not {value[:64]!r}...")
    return value


def named_run_arg(args, name: str) -> Optional[str]:
    """An optional run name under another parameter name (`compare`'s base_run, cand_run)."""
    value = _raw(args, name, required=False)
    if value is not None and len(value) > MAX_RUN_NAME:
        raise BadRequest(f"{name} must be a run name from `runs` (at most {MAX_RUN_NAME} characters), not {value[:64]!r}...")
    return value


def span_arg(args, name: str = "span", required: bool = True) -> Optional[str]:
    value = _raw(args, name, required)
    if value is not None and not SPAN_RE.match(value):
        raise BadRequest(f"{name} must be a 12-hex-digit id from `runs`, not {value!r}")
    return value


def int_arg(args, name: str, default: Optional[int], lo: int, hi: int, required: bool = False) -> Optional[int]:
    value = _raw(args, name, required)
    if value is None:
        return default
    try:
        number = int(value, 10)
    except ValueError:
        raise BadRequest(f"{name} must be an integer, not {value!r}") from None
    if not lo <= number <= hi:
        raise BadRequest(f"{name} must be in {lo}..{hi}, not {value!r}")
    return number


def float_arg(args, name: str, lo: float = -MAX_US) -> Optional[float]:
    value = _raw(args, name, False)
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        raise BadRequest(f"{name} must be a number, not {value!r}") from None
    if not lo <= number <= MAX_US:  # also refuses nan and inf
        raise BadRequest(f"{name} must be a number in {lo:g}..{MAX_US:g}, not {value!r}")
    return number


def window_args(args) -> tuple[Optional[float], Optional[float]]:
    start, end = float_arg(args, "start_us"), float_arg(args, "end_us")
    if start is not None and end is not None and end <= start:
        raise BadRequest(f"end_us must be greater than start_us, not {args.get('end_us')!r} <= {args.get('start_us')!r}")
    return start, end


def flag_arg(args, name: str) -> bool:
    """A `0`/`1` switch; absent is 0."""
    value = _raw(args, name, False)
    if value is None:
        return False
    if value not in ("0", "1"):
        raise BadRequest(f"{name} must be 0 or 1, not {value!r}")
    return value == "1"


def _bounded_text(args, name: str) -> str:
    """An optional text parameter, at most MAX_QUERY_CHARS characters ('' when absent)."""
    value = _raw(args, name, False) or ""
    if len(value) > MAX_QUERY_CHARS:
        raise BadRequest(f"{name} must be at most {MAX_QUERY_CHARS} characters, not {len(value)}")
    return value


def choice_arg(args, name: str, choices: tuple[str, ...], default: str) -> str:
    value = _raw(args, name, False)
    if value is None:
        return default
    if value not in choices:
        raise BadRequest(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return value


def causes_arg(args) -> Optional[list[int]]:
    value = _raw(args, "cause", False)
    if value is None:
        return None
    names = [part.strip() for part in value.split(",")]
    unknown = [n for n in names if n not in CAUSE_NAMES]
    if unknown:
        raise BadRequest(f"cause must be a comma-separated subset of {','.join(CAUSE_NAMES)}, not {value!r}")
    return sorted({CAUSE_NAMES.index(n) for n in names})


class FrontendBundle:
    """`static/bundle.js` (server/bundle.py), built on its first request and again when one of its modules
    changed on disk (size or modification time: a frontend edited while TensorBoard runs)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.built: Optional[tuple[tuple, bytes]] = None  # (stamps of its modules, the bundle)

    @staticmethod
    def _stamps(modules: list[str]) -> tuple:
        root = importlib.resources.files("kinetoscope.frontend")
        if not isinstance(root, os.PathLike):  # inside an archive: it cannot change
            return ()
        stamps = []
        for module in modules:
            try:
                info = os.stat(os.path.join(root, *module.split("/")))
                stamps.append((module, info.st_size, info.st_mtime_ns))
            except OSError:
                stamps.append((module, -1, -1))
        return tuple(stamps)

    def get(self) -> bytes:
        with self.lock:
            if self.built is not None and self._stamps([m for m, *_ in self.built[0]]) == self.built[0]:
                return self.built[1]
            try:
                text, modules = bundle(lambda module: read_static(module.split("/")).decode("utf-8"))
            except (NotFound, UnicodeDecodeError) as exc:
                raise BundleError(f"a frontend module cannot be read: {exc}") from None
            self.built = (self._stamps(modules), text.encode("utf-8"))
            return self.built[1]


# ---- the plugin ---------------------------------------------------------------------------------

class KinetoscopePlugin(base_plugin.TBPlugin):
    """Why the GPU sits idle, from the torch.profiler traces under `--logdir`."""

    plugin_name = "kinetoscope"

    def __init__(self, context: base_plugin.TBContext) -> None:
        self._context = context
        self._service: Optional[TraceService] = None
        self._service_lock = threading.Lock()
        self.bundle = FrontendBundle()

    def service(self) -> TraceService:
        """The loading manager, created on first use (raises NotFound without a logdir)."""
        with self._service_lock:
            if self._service is None:
                logdir = getattr(self._context, "logdir", None)
                if not logdir:
                    raise NotFound("TensorBoard was started without --logdir; kinetoscope needs one")
                self._service = TraceService(logdir, prepare=pipeline.prepare, index=SidecarIndex(), analyses=AnalysesCache(),
                                             preload_first=os.environ.get(PRELOAD_ENV, "1") != "0", stages=pipeline.STAGES)
            return self._service

    def start_early(self) -> None:
        """Starts the logdir scan (and so the first trace's preload) at TensorBoard's start, not at the
        first page view; does nothing without a logdir."""
        try:
            self.service().start()
        except Exception:  # noqa: BLE001 - TensorBoard must start whatever the logdir is
            log_once("start_early", "kinetoscope: could not start scanning the logdir", exc_info=True)

    def is_active(self) -> bool:
        try:
            return self.service().is_active()
        except Exception:  # noqa: BLE001 - is_active must never raise
            return False

    def frontend_metadata(self) -> base_plugin.FrontendMetadata:
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name="Kinetoscope", disable_reload=True)

    def get_plugin_apps(self) -> dict[str, Callable]:
        # TensorBoard calls this once at startup: scanning now (in the background) lets the first
        # `plugins_listing` see the traces instead of listing the plugin as inactive.
        try:
            self.service().start()
        except NotFound:
            pass
        return {
            "/index.js": self.index_js_route,
            "/static/bundle.js": self.bundle_route,
            "/static/*": self.static_route,
            "/runs": self.runs_route,
            "/status": self.status_route,
            "/summary": self.summary_route,
            "/verdict": self.verdict_route,
            "/markdown": self.markdown_route,
            "/ranks": self.ranks_route,
            "/gaps": self.gaps_route,
            "/launches": self.launches_route,
            "/memory": self.memory_route,
            "/stalls": self.stalls_route,
            "/whatif": self.whatif_route,
            "/critical_path": self.critical_path_route,
            "/lanes": self.lanes_route,
            "/counters": self.counters_route,
            "/event": self.event_route,
            "/export": self.export_route,
            "/compare": self.compare_route,
            "/tables": self.tables_route,
            "/search": self.search_route,
            "/name": self.name_route,
        }

    @_route
    def index_js_route(self, request):
        return http_util.Respond(request, read_static(["index.js"]), STATIC_TYPES[".js"])

    @_route
    def bundle_route(self, request):
        try:
            content = self.bundle.get()
        except BundleError as exc:  # the tab loads the modules one by one
            log_once("bundle", f"kinetoscope: static/bundle.js: {exc}")
            raise InternalError() from None
        return http_util.Respond(request, content, STATIC_TYPES[".js"])

    @_route
    def static_route(self, request):
        parts = static_parts(request.path)
        content_type = STATIC_TYPES[posixpath.splitext(parts[-1])[1]]
        return http_util.Respond(request, read_static(parts), content_type)

    @_route
    def runs_route(self, request):
        return routes.runs_impl(self.service())

    @_route
    def status_route(self, request):
        args = request.args
        return routes.status_impl(self.service(), span_arg(args, required=False), load=flag_arg(args, "load"),
                               wait_ms=int_arg(args, "wait_ms", None, 0, MAX_STATUS_WAIT_MS),
                               until=choice_arg(args, "until", ("ready", "lanes"), "ready"))

    @_route
    def summary_route(self, request):
        return routes.summary_impl(self.service(), span_arg(request.args))

    @_route
    def markdown_route(self, request):
        return routes.markdown_impl(self.service(), span_arg(request.args))

    @_route
    def verdict_route(self, request):
        return routes.run_verdict_impl(self.service(), run_arg(request.args))

    @_route
    def ranks_route(self, request):
        return routes.ranks_impl(self.service(), run_arg(request.args))

    @_route
    def gaps_route(self, request):
        args = request.args
        sid, device = span_arg(args), int_arg(args, "device", None, 0, 1 << 31, required=True)
        start, end = window_args(args)
        return routes.gaps_impl(self.service(), sid, device, causes=causes_arg(args),
                             min_us=float_arg(args, "min_us", lo=0.0) or 0.0, start_us=start, end_us=end,
                             sort=choice_arg(args, "sort", GAP_SORTS, "start"),
                             offset=int_arg(args, "offset", 0, 0, 1 << 40), limit=int_arg(args, "limit", 100, 1, 5000))

    @_route
    def launches_route(self, request):
        args = request.args
        return routes.launches_impl(self.service(), span_arg(args), bins=int_arg(args, "bins", 60, 1, 500),
                                 top=int_arg(args, "top", 50, 1, pipeline.MAX_TOP))

    @_route
    def memory_route(self, request):
        args = request.args
        start, end = window_args(args)
        return routes.memory_impl(self.service(), span_arg(args), max_points=int_arg(args, "max_points", 2000, 16, 100_000),
                               device=_raw(args, "device", False), start_us=start, end_us=end)

    @_route
    def stalls_route(self, request):
        args = request.args
        return routes.stalls_impl(self.service(), span_arg(args), offset=int_arg(args, "offset", 0, 0, 1 << 40),
                               limit=int_arg(args, "limit", 1000, 1, 5000))

    @_route
    def whatif_route(self, request):
        args = request.args
        edits = args.getlist("edit")
        if len(edits) > MAX_EDITS:
            raise BadRequest(f"at most {MAX_EDITS} edit arguments, not {len(edits)}")
        return replays.whatif_impl(self.service(), span_arg(args), edits, offset=int_arg(args, "offset", 0, 0, 1 << 40),
                                  limit=int_arg(args, "limit", MAX_WHATIF_STEPS, 1, MAX_WHATIF_STEPS))

    @_route
    def critical_path_route(self, request):
        args = request.args
        start, end = window_args(args)
        return replays.critical_path_impl(self.service(), span_arg(args), step=int_arg(args, "step", None, 0, 1 << 40),
                                         start_us=start, end_us=end)

    @_route
    def lanes_route(self, request):
        args = request.args
        start, end = window_args(args)
        return routes.lanes_impl(self.service(), span_arg(args), start_us=start, end_us=end,
                              width_px=int_arg(args, "width_px", 1600, 1, 10_000),
                              counters=flag_arg(args, "counters") if "counters" in args else True)

    @_route
    def counters_route(self, request):
        args = request.args
        start, end = window_args(args)
        return routes.counters_impl(self.service(), span_arg(args), start_us=start, end_us=end,
                                    width_px=int_arg(args, "width_px", 1600, 1, 10_000))

    @_route
    def event_route(self, request):
        args = request.args
        return routes.event_impl(self.service(), span_arg(args), int_arg(args, "row", None, 0, 1 << 62, required=True),
                              with_args=flag_arg(args, "args"))

    @_route
    def export_route(self, request):
        args = request.args
        if flag_arg(args, "whole"):  # the whole file, streamed: any size, bounded memory
            blocks, filename = routes.export_whole_impl(self.service(), span_arg(args))
            return wrappers.Response(blocks, mimetype="application/gzip", direct_passthrough=True, headers=[
                ("Content-Disposition", f'attachment; filename="{filename}"'), ("X-Content-Type-Options", "nosniff")])
        start, end = window_args(args)
        if flag_arg(args, "check"):
            return routes.export_check_impl(self.service(), span_arg(args), start_us=start, end_us=end)
        document, filename = routes.export_impl(self.service(), span_arg(args), start_us=start, end_us=end)
        packed = routes.gzip_export(msgspec.json.encode(document, enc_hook=_enc_hook))
        disposition = [("Content-Disposition", f'attachment; filename="{filename}"')]
        return http_util.Respond(request, packed, "application/gzip", headers=disposition)

    @_route
    def compare_route(self, request):
        args = request.args
        return compare_impl(self.service(), base=span_arg(args, "base", required=False),
                            cand=span_arg(args, "cand", required=False),
                            base_run=named_run_arg(args, "base_run"), cand_run=named_run_arg(args, "cand_run"))

    @_route
    def tables_route(self, request):
        args = request.args
        start, end = window_args(args)
        query = _raw(args, "filter", False)
        if query is not None and len(query) > MAX_QUERY_CHARS:
            raise BadRequest(f"filter must be at most {MAX_QUERY_CHARS} characters, not {len(query)}")
        return routes.tables_impl(self.service(), span_arg(args), by=choice_arg(args, "by", TABLE_KINDS, "op"),
                               start_us=start, end_us=end, sort=choice_arg(args, "sort", TABLE_SORTS, "") or None,
                               query=query, offset=int_arg(args, "offset", 0, 0, 1 << 40),
                               limit=int_arg(args, "limit", 100, 1, MAX_LIMIT),
                               group=choice_arg(args, "group", TABLE_GROUPS, "name"),
                               split=choice_arg(args, "split", TABLE_SPLITS, "name"),
                               side=choice_arg(args, "side", SIDES, "gpu"), scope=choice_arg(args, "scope", SCOPES, "all"),
                               min_len=int_arg(args, "min_len", 3, 1, MAX_LEN), max_len=int_arg(args, "max_len", 8, 2, MAX_LEN),
                               top=int_arg(args, "top", 20, 1, MAX_TOP), root=_bounded_text(args, "root"))

    @_route
    def name_route(self, request):
        args = request.args
        key = _raw(args, "key", True)
        if not NAME_KEY_RE.match(key):
            raise BadRequest(f"key must be 16 hex digits (a row's name_key), not {key[:40]!r}")
        return routes.name_impl(self.service(), span_arg(args), key)

    @_route
    def search_route(self, request):
        args = request.args
        query = _raw(args, "q", True)
        if len(query) > MAX_QUERY_CHARS:
            raise BadRequest(f"q must be at most {MAX_QUERY_CHARS} characters, not {len(query)}")
        return routes.search_impl(self.service(), span_arg(args), query, offset=int_arg(args, "offset", 0, 0, 1 << 40),
                               limit=int_arg(args, "limit", 100, 1, MAX_SEARCH_LIMIT))
