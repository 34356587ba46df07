"""The run-time library: what any engine needs to publish, read and change its config.
Generic over schemas (a generated package binds it to one); it never imports codegen, the
migration toolkit, the bundled server or any generated package, and has no default package.

The public face, for engine code:

- `configbags.runtime.context`: `Context` (publish, override, seal, server_info, explain,
  config_hash, scopes, runner views) and `process_context()`;
- `configbags.runtime.errors`: `ConfigError` and every refusal derived from it;
- `configbags.runtime.resolve`: `Facts`, `GpuFacts`, `ModelFacts` (what the rules see),
  `Layer` and `Origin` (where a value came from);
- `configbags.runtime.dist`: the config across processes and ranks (torch);
- `configbags.runtime.testing`: scopes and the `config_scope` pytest fixture;
- `configbags.runtime.legacy`: publishing from a legacy record during a migration;
- `configbags.runtime.project`: `[tool.configbags]`, for tools;
- `configbags.runtime.fleet`: contracts and their fingerprints, apply classes (`live`,
  `reload`, `restart`) and the route a change takes on a running server.

Generated code imports one module, `configbags.runtime.generated_api`, whose `API_VERSION`
each generated package checks at import. Modules and names with a leading underscore
(`context._building`, `dist._propagate`, ...) are private; the others (`record`, `registry`, `cliflags`,
`leaftypes`, `spelling`, `yamlsafe`, `limits`, `roles`) serve the generated face, the
generator and the toolkit, and an engine need not import them.
"""
