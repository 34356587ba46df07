"""The rule table shared by `configbags diff` and `configbags lint`: every finding names
one of these rules. A rule's id is stable (CI suppressions, allow files and SARIF refer to
it); its severity decides `--fail-on`; `breaks` says whose work it breaks."""

from __future__ import annotations

import enum

import attrs


class Severity(str, enum.Enum):
    INFO = "info"
    WARNING = "warning"
    BREAKING = "breaking"

    def __str__(self) -> str:
        return self.value

    @property
    def rank(self) -> int:
        return list(Severity).index(self)


class Audience(str, enum.Enum):
    OPERATORS = "operators"  # flags, aliases, env variables, config keys, presets
    LIVE_TUNING = "live tuning"  # overrides after publish (policy, capacity)
    ENGINE_CODE = "engine code"  # accessors, bag attributes, their types
    SECURITY = "security"
    COMPILE_CACHE = "compile-cache key"
    ROLE_AUDITS = "role audits"
    DEPLOYMENTS = "deployments"  # lint: a launch line, config file or manifest
    FLEET = "fleet checks"  # contracts.yaml: what `configbags fleet check` compares

    def __str__(self) -> str:
        return self.value


@attrs.frozen
class Rule:
    id: str
    severity: Severity
    breaks: tuple[Audience, ...]
    summary: str


B, W, INFO = Severity.BREAKING, Severity.WARNING, Severity.INFO
OP, LIVE, CODE = Audience.OPERATORS, Audience.LIVE_TUNING, Audience.ENGINE_CODE
SEC, HASH, AUDIT, DEPLOY = Audience.SECURITY, Audience.COMPILE_CACHE, Audience.ROLE_AUDITS, Audience.DEPLOYMENTS
FLEET = Audience.FLEET

_TABLE = (
    # operators: what a launch line, config file or environment may say
    Rule("leaf-removed", B, (OP, CODE), "a leaf is gone and no leaf names it in `renamed_from`"),
    Rule("removed-early", B, (OP,), "a leaf or old spelling is gone before the `remove_in` its deprecation promised"),
    Rule("removed-as-promised", INFO, (OP,), "a deprecated leaf or old spelling is gone at its `remove_in`"),
    Rule("flag-removed", B, (OP,), "a command-line flag or alias of a kept leaf is gone"),
    Rule("env-removed", B, (OP,), "an environment variable of a kept leaf is gone"),
    Rule("config-key-removed", B, (OP,), "an old name (config key) of a kept leaf is gone"),
    Rule("type-narrowed", B, (OP,), "the leaf's type accepts fewer values than before"),
    Rule("choices-removed", B, (OP,), "a value the leaf's choices allowed is no longer allowed"),
    Rule("min-raised", B, (OP,), "the leaf's minimum is higher than before (or new)"),
    Rule("max-lowered", B, (OP,), "the leaf's maximum is lower than before (or new)"),
    Rule("default-changed", W, (OP,), "the leaf's default is different: an unchanged launch gets another value"),
    Rule("became-required", B, (OP,), "the leaf must now be given"),
    Rule("required-leaf-added", B, (OP,), "a new leaf must be given"),
    Rule("preset-removed", B, (OP,), "a preset is gone"),
    Rule("preset-changed", W, (OP,), "a preset sets other values"),
    Rule("deprecated-past-remove-in", W, (OP,), "a leaf or old spelling is kept past the `remove_in` it promised "
         "(it already failed in the old schema)"),
    Rule("remove-in-reached", B, (OP,), "a leaf or old spelling the old schema accepted fails now: the new version "
         "is at its `remove_in` (a deprecation added past it, or a version bump onto it)"),
    Rule("leaf-deprecated", INFO, (OP,), "a leaf is newly deprecated"),
    Rule("leaf-renamed", W, (CODE,), "a leaf is renamed through `renamed_from`: operators keep the old "
         "spelling (with a warning), engine code reads the new attribute"),
    Rule("likely-rename", INFO, (), "a removed and an added leaf share type, help and default: if it is a "
         "rename, say so with `renamed_from`"),
    Rule("leaf-added", INFO, (), "a new optional leaf"),
    Rule("choices-added", INFO, (), "the leaf accepts more choices"),
    Rule("range-widened", INFO, (), "the leaf's minimum is lower or its maximum higher"),
    Rule("fallback-changed", W, (OP,), "the value an unset leaf resolves to (`fallback:`) is different: an "
         "unchanged launch gets another value"),
    Rule("const-changed", W, (OP,), "the value the bare flag stands for (`cli: {const}`) is different"),
    Rule("flag-arity-narrowed", B, (OP,), "the flag takes fewer forms than before (`cli: {nargs, const}`): the "
         "bare flag, or the values it took, are refused"),
    Rule("flag-arity-widened", INFO, (), "the flag takes more forms than before (bare, or more values)"),
    Rule("structure-narrowed", B, (OP,), "a json leaf's `structure:` takes fewer keys or values: config files and "
         "flags giving them are refused"),
    Rule("structure-widened", INFO, (), "a json leaf's `structure:` takes more keys or values"),
    Rule("abbreviations-removed", B, (OP,), "the command line no longer expands unique prefixes of flags "
         "(settings.yaml `cli: {abbreviations: legacy}`): launch lines using a prefix fail"),
    Rule("abbreviations-added", INFO, (), "the command line expands unique prefixes of flags (with a warning)"),
    Rule("rule-added", W, (OP,), "a new hardware or model rule (rules.yaml): an unchanged launch on the same GPU "
         "and model may resolve another value"),
    Rule("rule-removed", W, (OP,), "a hardware or model rule is gone: an unchanged launch on the same GPU and "
         "model may resolve another value"),
    Rule("rule-changed", W, (OP,), "a rule sets another leaf or value, under other conditions, from other inputs, "
         "in another order, or no longer overrides operators"),
    Rule("rule-forced", B, (OP,), "a rule overrides operators now (`force:`): a value a launch gives is replaced"),
    Rule("env-added", W, (OP,), "the leaf gains an environment variable: where it is already set, an unchanged "
         "launch resolves another value"),
    # live tuning
    Rule("policy-tightened", B, (LIVE,), "the leaf can be overridden later in life no more (runtime -> "
         "load_time -> startup)"),
    Rule("policy-loosened", INFO, (), "the leaf can be overridden later than before"),
    Rule("writers-removed", B, (LIVE,), "a role may no longer override the leaf (`writers:`): its PATCHes, "
         "rollouts and overrides are refused"),
    Rule("capacity-lowered", W, (LIVE,), "a runtime override is bounded lower: a capacity added, or the "
         "default of a capacity leaf lowered"),
    Rule("capacity-removed", B, (LIVE, SEC), "a runtime override lost its capacity bound: a PATCH may exceed "
         "buffers sized at publish"),
    Rule("capacity-changed", B, (LIVE, SEC), "a runtime override is bounded by another leaf: a PATCH may exceed "
         "the buffers the old capacity sized at publish"),
    Rule("metric-removed", W, (FLEET,), "a leaf is no longer exported on /metrics: dashboards and alerts on "
         "its series go blank"),
    # engine code
    Rule("namespace-moved", B, (CODE,), "the leaf or derived value moved to another namespace (another "
         "accessor and bag)"),
    Rule("type-changed", B, (CODE,), "the attribute's Python type changed (readers see values of another type)"),
    Rule("namespace-removed", B, (CODE,), "a namespace is gone: its accessor (`get_<name>()`) or bag attribute "
         "with it"),
    Rule("attribute-removed", B, (CODE,), "a derived value or a rank (a bag attribute) is gone"),
    Rule("derived-changed", W, (CODE,), "a derived value is computed by another function, from other inputs (or "
         "in another order), or pinned differently: engine code reading it sees other values"),
    Rule("role-removed", B, (CODE,), "a role is gone: code publishing as it fails"),
    Rule("write-any-changed", W, (CODE, SEC), "the test role's `write_any` was added or removed: tests acting as "
         "it may write every leaf, or only the leaves that name it (no other role may have it)"),
    Rule("owner-changed", B, (CODE, SEC), "another role owns the leaf: the old owner's overrides are refused, "
         "the new owner may change it"),
    # security
    Rule("secret-dropped", B, (SEC,), "the leaf is no longer secret: its value shows in readbacks, logs and "
         "the hash"),
    Rule("secret-added", INFO, (), "the leaf is secret now"),
    Rule("writers-added", W, (SEC,), "another role may override the leaf (`writers:`); `operator` opens it to "
         "the HTTP door's admin key"),
    # fleet checks
    Rule("contract-removed", B, (FLEET,), "a contract is gone: fleet check no longer compares its values"),
    Rule("contract-weakened", B, (FLEET,), "a contract lost a member or a role: fleet check no longer compares "
         "that value, or those servers"),
    Rule("contract-tightened", W, (FLEET,), "a contract gained a member or a role: servers of the old and new "
         "schema declare it differently until all are upgraded"),
    Rule("contract-added", INFO, (), "a new contract"),
    Rule("fleet-roles-changed", B, (FLEET,), "what decides a server's fleet role changed (contracts.yaml "
         "`role_leaf`, its default, or a rule setting it): servers may get another role, so fleet check compares "
         "them under other contracts, or none"),
    # the compile-cache key
    Rule("hash-leaf-added", W, (HASH,), "a leaf feeds the config hash now: every compile-cache key changes"),
    Rule("hash-leaf-removed", W, (HASH,), "a leaf no longer feeds the config hash: values that differ in it "
         "share a compile-cache key"),
    # role audits
    Rule("role-reads-changed", W, (AUDIT,), "a role's read set changed: its audits no longer describe it"),
    # lint
    Rule("lint-unknown", B, (DEPLOY,), "a flag, environment variable or config key the schema does not know"),
    Rule("lint-deprecated", W, (DEPLOY,), "a deprecated spelling: it works until the release that removes it"),
    Rule("lint-removed", B, (DEPLOY,), "a spelling the schema's version no longer accepts"),
    Rule("lint-bad-value", B, (DEPLOY,), "a value that does not fit the leaf's type, choices or range"),
    Rule("lint-repeated", W, (DEPLOY,), "a leaf given more than once in one launch line (a flag twice, a flag and "
         "its alias, `--x --no-x`): the server keeps the last"),
    Rule("lint-unreadable", B, (DEPLOY,), "a file that does not parse as its format"),
    Rule("lint-refused", B, (DEPLOY,), "a launch line the server's own parser refuses: a word no flag takes, a "
         "flag given twice, a value given to a flag that takes none"),
    Rule("lint-unchecked", INFO, (), "a launch line holds words lint cannot see: an unquoted expansion (`$ARGS`, "
         "a Python `*args`) or an array lint cannot resolve (`\"${ARGS[@]}\"`) standing alone, which becomes words "
         "known only at run time"),
    Rule("lint-skipped", INFO, (), "a ConfigMap entry without a .yaml/.yml/.json suffix that is no mapping of mostly "
         "the schema's keys, so not linted as a config file: a pod may still mount it as one"),
)

RULES: dict[str, Rule] = {r.id: r for r in _TABLE}
assert len(RULES) == len(_TABLE), "rule ids are unique"
DIFF_RULES = tuple(r for r in _TABLE if not r.id.startswith("lint-"))
LINT_RULES = tuple(r for r in _TABLE if r.id.startswith("lint-"))


@attrs.frozen
class Finding:
    """One rule firing at one place: `where` is `file:line` in the NEW schema for diff
    (or the OLD one, marked, when the NEW has no place for it) and in the linted file for
    lint; `subject` the leaf, spelling or role it is about."""

    rule: str
    subject: str
    message: str
    file: str
    line: int
    fix: str = ""
    allowed: str | None = None  # the allow file's reason, when an entry covers it

    @property
    def spec(self) -> Rule:
        return RULES[self.rule]

    @property
    def severity(self) -> Severity:
        return self.spec.severity

    def sort_key(self) -> tuple[int, str, int, str, str]:
        return (-self.severity.rank, self.file, self.line, self.rule, self.subject)


def parse_severity(text: str) -> Severity | None:
    """`--fail-on`'s value: a severity, or `never` (None)."""
    return None if text == "never" else Severity(text)


def fails(findings: list[Finding], fail_on: Severity | None) -> bool:
    return fail_on is not None and any(
        f.allowed is None and f.severity.rank >= fail_on.rank for f in findings)
