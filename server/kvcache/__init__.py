"""The KV pool configurator, one job per module:

- `model_shape`: what a model's `config.json` says about its cache and weights;
- `settings`: the leaves the plan reads, the device memory, the `auto` dtypes;
- `defaults`: SGLang's sizing formulas as plain functions (what the hardware and the model
  decide about the config is the schema's rules, `configbags.server.rules`, not here);
- `bundled`: the bundled rules' decisions for a caller that plans without a context;
- `validate`: settings no engine would run, refused by name;
- `sizing` and `mamba`: the budget as a function of mem_fraction_static, the mamba pool;
- `planner`: `plan_kv`, the named steps from settings to a `KvPlan` (`records`);
- `tensors`, `messages`: the tensor shapes, the error messages;
- `configurator`: reads the leaves from a context and writes the decisions back;
- `pools`: torch allocation (the only module here that imports torch);
- `gpus`: device presets for `configbags plan --gpu`.
"""
