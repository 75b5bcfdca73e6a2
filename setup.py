"""Kinetoscope: a TensorBoard plugin that explains why the GPU sits idle."""
from setuptools import Extension, setup

# One C pass from decoded event structs to columns (kinetoscope/trace/_columns.c). Optional: without a
# compiler the package installs and runs on the pure-Python extractor, about 2x slower to decode.
COLUMNS = Extension("kinetoscope.trace._columns", ["tb_plugin/kinetoscope/trace/_columns.c"], optional=True,
                    extra_compile_args=["-O2"])

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
        "kinetoscope.views",
        "kinetoscope.index",
        "kinetoscope.server",
        "kinetoscope.cli",
        "kinetoscope.formats",
        "kinetoscope.frontend",
    ],
    package_data={"kinetoscope.server": ["HTTP_API.md"],
                  "kinetoscope.frontend": ["*.js", "*.css", "*.json", "model/*.js", "render/*.js", "ui/*.js"]},
    ext_modules=[COLUMNS],
    install_requires=[
        "msgspec>=0.18",
        "numpy>=1.24",
        "fsspec>=2023.1",
        "isal>=1.0",
        "tensorboard>=2.11",
        "werkzeug>=2.2",
        "protobuf>=3.20",
    ],
    extras_require={
        "test": ["pytest>=7", "psutil>=5.9", "ruff>=0.4", "hypothesis>=6",
                 # remote logdirs are tested against moto's S3 server on 127.0.0.1
                 "moto[server]>=5.0", "s3fs>=2023.1", "boto3>=1.26",
                 # the index runs on a local Dask cluster in the tests
                 "dask[distributed]>=2023.1"],
        # remote logdirs (fsspec backends); boto3 also lets TensorBoard itself read s3:// logdirs
        "s3": ["s3fs>=2023.1", "boto3>=1.26"],
        "gcs": ["gcsfs>=2023.1"],
        "azure": ["adlfs>=2023.1"],
        "hdfs": ["pyarrow>=10"],
        "dask": ["dask[distributed]>=2023.1"],
    },
    entry_points={
        "tensorboard_plugins": ["kinetoscope = kinetoscope.server.tb_loader:KinetoscopeLoader"],
        "console_scripts": ["kinetoscope = kinetoscope.cli.main:main"],
    },
)
