"""The renderers: analyses as text, markdown, CSV and JSON documents, one module per document (`report`, `compare`,
`table`) over the shared `units`. Pure functions from JSON-ready dicts to strings; the CLI and the server both use them."""
