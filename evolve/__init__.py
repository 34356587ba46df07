"""Changing a schema without breaking anyone: `configbags diff` (schema changes classified
by rule), `configbags lint` (deployment files checked against a schema version) and
`configbags matrix` (resolution held as a golden file). Build-time tools: they read
schemas through `view.py`, the one adapter over codegen's loaded model."""
