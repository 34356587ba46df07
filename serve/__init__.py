"""The operator's door: `configbags serve`, an HTTP config API (FastAPI on uvicorn, the
`serve` extra) whose permissions come from the schema. `door` holds the logic, `app` the
routes, `ranks` the multi-rank group, `cli` the command."""
