"""Run-time half of configbags: the process config context and its consumers. Generic over
schemas; the generated package binds it to one. Never imports codegen."""
