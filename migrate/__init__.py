"""The read ratchet: find every read of the raw `ServerArgs` record (`scan`), hold the
set of such reads to an allowlist (`check`), and move readers onto the generated
accessors (`fix`). Build-time only; `cli.main` is `configbags ratchet`."""
