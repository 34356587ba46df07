"""The KV pool configurator: model shapes from `config.json`, allocation sizing, the pure
plan arithmetic (`planner`), the accessor-reading configurator with its write-backs
(`configurator`), and torch allocation (`pools`, the only module here that imports torch)."""
