"""The frontend's files as `static/<path>` serves them: only what the package ships, never a byte outside it."""
from __future__ import annotations

import importlib.resources
import os
import posixpath

from .errors import NotFound

STATIC_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".svg": "image/svg+xml"}
STATIC_MARKER = "/data/plugin/kinetoscope/static/"
MAX_STATIC_PATH = 256
# What the package ships (setup.py's package_data): its top-level files and the model/render/ui modules. A
# development checkout holds more beside them (frontend/test/: the tests and their fixtures), never served.
STATIC_FOLDERS = ("model", "render", "ui")


def static_parts(path: str) -> list[str]:
    """The validated parts of a static path relative to the frontend package (raises NotFound)."""
    rel = path.split(STATIC_MARKER, 1)[1] if STATIC_MARKER in path else path.split("/static/", 1)[-1]
    if len(rel) > MAX_STATIC_PATH:  # no frontend file has such a name; never echo it whole
        raise NotFound(f"no static file {rel[:64]!r}...")
    parts = rel.split("/")
    bad = (not rel or "\\" in rel or "\x00" in rel or ":" in rel or posixpath.isabs(rel)
           or any(p in ("", ".", "..") or p.startswith(".") for p in parts)
           or posixpath.splitext(rel)[1] not in STATIC_TYPES or len(parts) > 2
           or (len(parts) == 2 and parts[0] not in STATIC_FOLDERS) or parts[-1].endswith(".test.js"))
    if bad:
        raise NotFound(f"no static file {rel!r}")
    return parts


def read_static(parts: list[str]) -> bytes:
    """A file of the `kinetoscope.frontend` package, never anything outside it (raises NotFound)."""
    root = importlib.resources.files("kinetoscope.frontend")
    resource = root.joinpath(*parts)
    if isinstance(root, os.PathLike):  # on disk: refuse symlinks that lead out of the package
        real_root = os.path.realpath(root)
        if os.path.commonpath([real_root, os.path.realpath(resource)]) != real_root:
            raise NotFound(f"no static file {'/'.join(parts)!r}")
    try:
        if not resource.is_file():
            raise NotFound(f"no static file {'/'.join(parts)!r}")
        return resource.read_bytes()
    except OSError:  # a name the filesystem refuses (too long, bad bytes) names no file of ours
        raise NotFound(f"no static file {'/'.join(parts)[:64]!r}") from None
