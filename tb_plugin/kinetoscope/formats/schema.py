"""The JSON documents' layout version and their published JSON Schemas (formats/schemas/*.schema.json).

Every `--format json` document of the CLI (`report`, `table`, `diff`, `whatif`) carries `schema_version`;
the schema of each is shipped in the package, so CI bots and scripts can validate what they read. The
version is raised when a field is removed or changes meaning; fields may be added within a version.
"""
from __future__ import annotations

import json
from importlib import resources
from typing import Any

SCHEMA_VERSION = 1
DOCUMENTS = ("report", "table", "diff", "whatif")


def versioned(document: dict[str, Any]) -> dict[str, Any]:
    """`document` with `schema_version` first (a new dict; the input is left alone)."""
    return {"schema_version": SCHEMA_VERSION, **document}


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one document: report, table, diff or whatif.

    Raises:
        KeyError: for a name not in DOCUMENTS.
    """
    if name not in DOCUMENTS:
        raise KeyError(f"no schema for {name!r}; documents: {', '.join(DOCUMENTS)}")
    return json.loads(resources.files(__package__).joinpath("schemas", f"{name}.schema.json").read_text(encoding="utf-8"))
