"""configbags: the import root and the `configbags` command. The rooms map under it
(`pyproject.toml`'s package-dir): `codegen` (build time), `migrate` (the migration
toolkit), `runtime` (the library inside any engine), `serve` (the HTTP door), `server`
(the bundled server's application) and `generated` (its generated package). This folder
holds the command's dispatcher and the commands that work on any generated package."""
