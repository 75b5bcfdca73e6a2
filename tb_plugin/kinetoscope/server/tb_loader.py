"""TensorBoard's entry point: the plugin's budgets as TensorBoard flags, then the plugin.

`tensorboard --logdir L --kinetoscope_max_inflate_ratio 100` is the same as setting
`KINETOSCOPE_MAX_INFLATE_RATIO=100` in TensorBoard's environment: a flag, when given, sets its variable
for this process and the decoder processes it starts, which read the budgets from the environment.
"""
from __future__ import annotations

import json
import os

from tensorboard.plugins import base_plugin

from ..trace.budgets import CLI_OPTIONS
from ..trace.remote import OPTIONS_ENV, OptionsError, credentials_in_url, parse_options
from ..trace.storage import LINKED_ROOTS_ENV, linked_roots_with

# (flag without its `--kinetoscope_` prefix, environment variable, what it bounds); the budgets first.
FLAGS = tuple((option.lstrip("-").replace("-", "_"), env, bounds) for option, env, _, bounds in CLI_OPTIONS) + (
    ("decoder_memory_bytes", "KINETOSCOPE_DECODER_MEMORY_BYTES", "address space of each decoder process"),
    ("decode_timeout_s", "KINETOSCOPE_DECODE_TIMEOUT_S", "wall time of each decoder process"),
    ("cache_max_bytes", "KINETOSCOPE_CACHE_MAX_BYTES", "size of the on-disk model cache"),
)


class KinetoscopeLoader(base_plugin.TBLoader):
    """Adds `--kinetoscope_<budget>` flags; `load` applies those given and makes the plugin."""

    def define_flags(self, parser) -> None:
        group = parser.add_argument_group("kinetoscope")
        for name, env, bounds in FLAGS:
            group.add_argument(f"--kinetoscope_{name}", type=float, default=None, metavar="N",
                               help=f"Kinetoscope: {bounds} (default: ${env}, else see the README)")
        group.add_argument("--kinetoscope_storage_options", type=str, default=None, metavar="JSON",
                           help=f"Kinetoscope: fsspec storage options for a remote logdir (s3://, gs://, abfs://, "
                                f"hdfs://), a JSON object or @FILE holding one (default: ${OPTIONS_ENV}; credentials "
                                f"are better left to the environment or the backend's config files)")
        group.add_argument("--kinetoscope_allow_links_to", type=str, action="append", default=None, metavar="DIR",
                           help=f"Kinetoscope: follow links in the logdir that lead into DIR (repeatable; default: "
                                f"${LINKED_ROOTS_ENV}). Links out of the logdir are not followed otherwise, so that a "
                                f"shared logdir cannot point the server at files elsewhere on this machine")

    def fix_flags(self, flags) -> None:
        for name in ("logdir", "logdir_spec"):  # TensorBoard shows them at /data/environment and in its log
            refused = credentials_in_url(str(getattr(flags, name, None) or ""))
            if refused is not None:
                raise base_plugin.FlagsError(f"--{name}: {refused}")
        for name, _, _ in FLAGS:
            value = getattr(flags, f"kinetoscope_{name}", None)
            if value is not None and not value > 0:
                raise base_plugin.FlagsError(f"--kinetoscope_{name} must be a positive number, not {value}")
        options = getattr(flags, "kinetoscope_storage_options", None)
        if options is not None:
            try:
                parsed = parse_options(options)
            except OptionsError as exc:
                raise base_plugin.FlagsError(f"--kinetoscope_storage_options: {exc}") from None
            # In force from now on, for this process and its decoder processes; the flag itself is blanked,
            # since TensorBoard serves every flag's value at /data/environment.
            os.environ[OPTIONS_ENV] = json.dumps(parsed)
            flags.kinetoscope_storage_options = "(set; not shown)"

    def load(self, context: base_plugin.TBContext):
        flags = getattr(context, "flags", None)
        for name, env, _ in FLAGS:
            value = getattr(flags, f"kinetoscope_{name}", None) if flags is not None else None
            if value is not None:
                os.environ[env] = repr(value)
        allowed = getattr(flags, "kinetoscope_allow_links_to", None) if flags is not None else None
        if allowed:  # for this process and its decoder processes, which read the roots from the environment
            os.environ[LINKED_ROOTS_ENV] = linked_roots_with(allowed)
        from .plugin import PRELOAD_ENV, KinetoscopePlugin
        plugin = KinetoscopePlugin(context)
        if os.environ.get(PRELOAD_ENV, "1") != "0":
            plugin.start_early()  # scan now and decode the default span while nobody waits for it yet
        return plugin
