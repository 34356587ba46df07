"""configbags: the `configbags` command. The work lives in `codegen/` (build time) and
`runtime/` (inside the engine); this package only dispatches to them."""
