"""The bundled server: configbags' first application, built above its generated package
(`configbags.generated`). It holds what only this server decides: its rule and derived
functions, SGLang's KV pool sizing (`kvcache/`) and the `configbags plan` command."""
