"""The typed seam between a generated config package and the KV configurator: the bags it
reads, as Protocols, and what a schema must declare to drive it.

`KvConfig` is the configurator's whole view of config: one Protocol per namespace, each leaf
a read-only property typed as the generated bags type it. mypy checks every read of
`configurator.settings_from` against it, and checks (below) that the bundled package's `cfg`
and runner views satisfy it structurally, so a leaf renamed in `schema/` fails `make lint`.

Another engine's package is unknown to mypy, so `check` compares the same Protocols with its
registry at run time: each leaf it lacks, declares in another namespace, or types so the
reads cannot take it is named in one `SeamError`, with the namespace to declare it in. A leaf
marked `Default(...)` is optional: a schema that does not declare it reads the default (one
with a `group` is declared with the rest of its group or not at all). docs/PLAN.md lists the
seam as a table; `seam_table()` prints it.
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Iterator, Mapping
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Protocol,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
)

import attrs

from configbags.runtime.errors import ConfigError
from configbags.runtime.leaftypes import Policy, TypeSpec
from configbags.runtime.registry import DerivedSpec, LeafSpec, Registry
from configbags.server.kvcache.settings import WRITTEN_LEAVES

# The role the configurator runs in: it loads the model and writes the KV decisions back
# (`configbags plan` publishes as this role).
CONFIGURATOR_ROLE = "worker"


@attrs.frozen
class Default:
    """An optional leaf: a schema that does not declare it reads `value`. The leaves of one
    `group` are declared together or not at all (half of them would plan nonsense)."""

    value: object
    group: str | None = None


SPECULATIVE = "speculative decoding"


class ParallelReads(Protocol):
    @property
    def tp_size(self) -> int: ...
    @property
    def pp_size(self) -> Annotated[int, Default(1)]: ...
    @property
    def attn_dp_size(self) -> Annotated[int, Default(1)]: ...
    @property
    def attn_tp_size(self) -> Annotated[int | None, Default(None)]: ...  # None: tp // attn_dp
    @property
    def attn_dcp_size(self) -> Annotated[int, Default(1)]: ...
    @property
    def enable_dp_attention(self) -> Annotated[bool, Default(False)]: ...
    @property
    def ep_size(self) -> Annotated[int, Default(1)]: ...  # the routed experts must divide over it


class ModelReads(Protocol):
    @property
    def context_length(self) -> int | None: ...
    @property
    def kv_cache_dtype(self) -> str: ...
    @property
    def dtype(self) -> Annotated[str, Default("auto")]: ...


class ScheduleReads(Protocol):
    @property
    def page_size(self) -> int | None: ...
    @property
    def mem_fraction_static(self) -> float | None: ...
    # Never None: the schema decides them (a default or a fallback); the planner keeps no copy.
    @property
    def swa_full_tokens_ratio(self) -> float: ...
    @property
    def mamba_full_memory_ratio(self) -> float: ...
    @property
    def max_running_requests(self) -> Annotated[int | None, Default(None)]: ...
    @property
    def max_total_tokens(self) -> Annotated[int | None, Default(None)]: ...
    @property
    def disable_hybrid_swa_memory(self) -> Annotated[bool, Default(False)]: ...
    @property
    def max_mamba_cache_size(self) -> Annotated[int | None, Default(None)]: ...
    @property
    def disable_overlap_schedule(self) -> Annotated[bool, Default(False)]: ...
    @property
    def chunked_prefill_size(self) -> Annotated[int | None, Default(None)]: ...  # the SWA chunk cap


class MemoryReads(Protocol):
    @property
    def disable_radix_cache(self) -> Annotated[bool, Default(False)]: ...


class KernelReads(Protocol):
    @property
    def attention_backend(self) -> Annotated[str | None, Default(None)]: ...


class MambaReads(Protocol):
    @property
    def mamba_ssm_dtype(self) -> Annotated[str | None, Default(None)]: ...
    @property
    def mamba_radix_cache_strategy(self) -> Annotated[str, Default("auto")]: ...
    @property
    def enable_mamba_extra_buffer(self) -> Annotated[bool, Default(False)]: ...
    @property
    def enable_mamba_extra_buffer_lazy(self) -> Annotated[bool, Default(False)]: ...


class GraphReads(Protocol):
    # SGLang's activation and CUDA-graph reserve, reported beside the budget
    @property
    def cuda_graph_max_bs_decode(self) -> Annotated[int | None, Default(None)]: ...
    @property
    def disable_cuda_graph(self) -> Annotated[bool, Default(False)]: ...
    @property
    def disable_decode_cuda_graph(self) -> Annotated[bool, Default(False)]: ...


class MoeReads(Protocol):
    @property
    def ep_num_redundant_experts(self) -> Annotated[int, Default(0)]: ...  # expert slots beside the routed


class ExecReads(Protocol):
    @property
    def kernel(self) -> KernelReads: ...
    @property
    def moe(self) -> MoeReads: ...
    @property
    def mamba(self) -> MambaReads: ...
    @property
    def graph(self) -> GraphReads: ...


class SpecReads(Protocol):
    @property
    def speculative_algorithm(self) -> Annotated[str | None, Default(None, SPECULATIVE)]: ...
    @property
    def speculative_num_steps(self) -> Annotated[int | None, Default(None, SPECULATIVE)]: ...
    @property
    def speculative_eagle_topk(self) -> Annotated[int | None, Default(None, SPECULATIVE)]: ...
    @property
    def speculative_num_draft_tokens(self) -> Annotated[int | None, Default(None, SPECULATIVE)]: ...
    @property
    def max_speculative_num_draft_tokens(self) -> Annotated[int, Default(0, SPECULATIVE)]: ...
    @property
    def speculative_draft_kv_cache_dtype(self) -> Annotated[str | None, Default(None, SPECULATIVE)]: ...
    @property
    def speculative_draft_model_path(self) -> Annotated[str | None, Default(None)]: ...


class KvConfig(Protocol):
    """Every bag the KV configurator reads, by namespace."""

    @property
    def parallel(self) -> ParallelReads: ...
    @property
    def model(self) -> ModelReads: ...
    @property
    def schedule(self) -> ScheduleReads: ...
    @property
    def memory(self) -> MemoryReads: ...
    @property
    def exec(self) -> ExecReads: ...
    @property
    def spec(self) -> SpecReads: ...


if TYPE_CHECKING:  # static only: importing the bundled package would register its context
    from configbags.generated.accessors import ConfigView, ProcessConfigView

    def _bundled_cfg_conforms(view: ProcessConfigView) -> KvConfig:
        return view  # `cfg` and the accessors' view

    def _bundled_runner_view_conforms(view: ConfigView) -> KvConfig:
        return view  # a draft or target runner's view


# -- the seam as data, read off the Protocols ------------------------------------------


@attrs.frozen
class SeamLeaf:
    namespace: str
    name: str
    type: TypeSpec
    default: Default | None  # None: required

    @property
    def required(self) -> bool:
        return self.default is None


def _is_protocol(hint: object) -> bool:
    return isinstance(hint, type) and bool(getattr(hint, "_is_protocol", False))


def _type_spec(hint: object) -> TypeSpec:
    args = get_args(hint)
    if get_origin(hint) in (Union, types.UnionType) and type(None) in args:
        (inner,) = (a for a in args if a is not type(None))
        return TypeSpec(cast(type, inner).__name__, True)
    return TypeSpec(cast(type, hint).__name__, False)


def _walk(protocol: type, path: str) -> Iterator[SeamLeaf | tuple[str, str]]:
    """The seam's leaves under `protocol` (namespace `path`), and (path, attribute) of each
    namespace it holds."""
    for name, member in vars(protocol).items():
        if not isinstance(member, property):
            continue
        hint = get_type_hints(member.fget, include_extras=True)["return"]
        if _is_protocol(hint):
            child = f"{path}.{name}" if path else name
            yield (path, name)
            yield from _walk(hint, child)
            continue
        default = None
        if get_origin(hint) is Annotated:
            hint, *meta = get_args(hint)
            default = next(m for m in meta if isinstance(m, Default))
        yield SeamLeaf(path, name, _type_spec(hint), default)


_WALKED = tuple(_walk(KvConfig, ""))
SEAM: tuple[SeamLeaf, ...] = tuple(x for x in _WALKED if isinstance(x, SeamLeaf))
_CHILDREN: tuple[tuple[str, str], ...] = tuple(x for x in _WALKED if isinstance(x, tuple))


def seam_table() -> str:
    """The seam as the Markdown table docs/PLAN.md shows."""
    rows = ["| namespace | leaf | type | if the schema lacks it |", "|---|---|---|---|"]
    for leaf in SEAM:
        if leaf.default is None:
            missing = "**required**"
        else:
            missing = f"reads `{leaf.default.value!r}`"
            if leaf.default.group:
                missing += f" (with the rest of {leaf.default.group})"
        rows.append(f"| `{leaf.namespace}` | `{leaf.name}` | `{leaf.type}` | {missing} |")
    return "\n".join(rows)


# -- checking a schema against the seam ------------------------------------------------


class SeamError(ConfigError):
    """A schema that cannot drive the KV configurator; the message names every fix."""


def _fits(spec: LeafSpec | DerivedSpec, want: TypeSpec) -> bool:
    if spec.type.base != want.base:
        return False
    never_none = not spec.type.optional or (isinstance(spec, LeafSpec) and spec.has_fallback)
    return want.optional or never_none


def _read_problems(registry: Registry, writer: str | None) -> list[str]:
    declared: dict[str, LeafSpec | DerivedSpec] = {**registry.leaves, **registry.derived}
    groups = {leaf.default.group for leaf in SEAM if leaf.default and leaf.default.group and leaf.name in declared}
    problems = []
    for leaf in SEAM:
        spec = declared.get(leaf.name)
        if spec is None:
            group = leaf.default.group if leaf.default else None
            if leaf.required or group in groups:
                how = f"{leaf.type}"
                if writer is not None and leaf.name in WRITTEN_LEAVES:  # say it all now, not next run
                    how += f", owner: {writer}, override: load_time"
                why = f" (the rest of {group} is declared)" if group else ""
                problems.append(f"declare {leaf.name} ({how}) in namespace {leaf.namespace}{why}")
            continue
        if spec.namespace != leaf.namespace:
            problems.append(f"move {leaf.name} from namespace {spec.namespace} to namespace {leaf.namespace}")
        if not _fits(spec, leaf.type):
            fix = "a default or a fallback" if spec.type.base == leaf.type.base else f"type {leaf.type}"
            problems.append(f"{leaf.name} is {spec.type}, but the configurator reads a {leaf.type}: give it {fix}")
    return problems


def _write_problems(registry: Registry, role: str, leaves: Iterable[str], fixed_role: bool) -> list[str]:
    problems = []
    if role not in registry.roles:
        problems.append(f"add role {role} to roles.yaml: the role that loads the model and writes the "
                        "KV decisions back")
    for name in leaves:
        spec = registry.leaves.get(name)
        if spec is None:  # not declared: the decision is not recorded (an optional leaf)
            continue
        fixes = []
        if spec.policy is Policy.STARTUP:
            fixes.append("give it `override: load_time`")
        if not registry.may_write(role, spec):
            fixes.append(f"give it `owner: {role}` or `writers: [{role}]`"
                         + ("" if fixed_role else f" (or run the configurator in role {spec.owner})"))
        if fixes:
            problems.append(f"{name} (owner {spec.owner}, override {spec.policy.value}) is written back at load "
                            f"time by role {role}: {'; '.join(fixes)}")
    return problems


def check(registry: Registry, *, role: str | None = None, writes: Iterable[str] = WRITTEN_LEAVES,
          fixed_role: bool = False) -> None:
    """Raise one SeamError naming everything `registry`'s schema must change so the
    configurator can read it (and, with `role`, write `writes` back from that role;
    `fixed_role`: the caller cannot run in another, as `configbags plan`)."""
    problems = _read_problems(registry, role)
    if role is not None:
        problems += _write_problems(registry, role, writes, fixed_role)
    if problems:
        raise SeamError(
            "this schema cannot drive the KV configurator (see \"The config it reads\" in configbags' "
            "docs/PLAN.md); in schema/namespaces/*.yaml and roles.yaml:\n  - " + "\n  - ".join(problems)
            + "\nthen run configbags gen"
        )


# -- reading: the seam over a context's (or runner view's) bags ----------------------------


class BagSource(Protocol):
    """What a context and a runner view share: the registry and each namespace's bag, with
    role scoping applied (and, for a runner view, its overlay)."""

    @property
    def registry(self) -> Registry: ...
    def bag(self, path: str) -> Any: ...


@attrs.frozen
class _Namespace:
    """One namespace of the seam as a schema declares it: the seam leaves it lacks (each
    read as its default), and its child namespaces by attribute."""

    path: str
    declared: bool
    defaults: Mapping[str, object]
    children: Mapping[str, _Namespace]

    @property
    def complete(self) -> bool:
        return self.declared and not self.defaults and all(c.complete for c in self.children.values())


def _layout(registry: Registry) -> _Namespace:
    def build(path: str) -> _Namespace:
        children = {attr: build(f"{parent}.{attr}" if parent else attr) for parent, attr in _CHILDREN if parent == path}
        spec = registry.namespaces.get(path)
        fields = spec.fields if spec is not None else ()
        lacking = {leaf.name: leaf.default.value for leaf in SEAM
                   if leaf.namespace == path and leaf.default is not None and leaf.name not in fields}
        return _Namespace(path, spec is not None, lacking, children)

    return build("")


class _Filled:
    """The seam's root (its attributes are namespaces), or a namespace whose schema lacks
    some optional leaves: the declared ones are read from the source's bag (role scoping and
    overlays apply), the others are the defaults. Under the bundled server only the root is
    one: its namespaces are complete, so a read is the generated bag's own slot load."""

    __slots__ = ("_namespace", "_source")

    def __init__(self, source: BagSource, namespace: _Namespace) -> None:
        self._source = source
        self._namespace = namespace

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):  # copy, pickle and friends probe for hooks: there are none
            raise AttributeError(name)
        ns = self._namespace
        child = ns.children.get(name)
        if child is not None:
            return _view(self._source, child)
        if name in ns.defaults:
            return ns.defaults[name]
        return getattr(self._source.bag(ns.path), name)


def _view(source: BagSource, namespace: _Namespace) -> object:
    return source.bag(namespace.path) if namespace.complete else _Filled(source, namespace)


_LAYOUTS: dict[int, tuple[Registry, _Namespace]] = {}  # id(registry) -> (registry, its layout)


def config_of(source: BagSource) -> KvConfig:
    """The seam over `source` (a context or a runner view): checked against its registry
    once (SeamError names every missing leaf), then each read goes through `source.bag()`."""
    registry = source.registry
    known = _LAYOUTS.get(id(registry))
    if known is None or known[0] is not registry:
        check(registry)
        known = _LAYOUTS[id(registry)] = (registry, _layout(registry))
    # The root is never a bag; the Protocols were checked against this schema just above.
    return cast(KvConfig, _Filled(source, known[1]))
