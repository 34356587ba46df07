"""Environment keys built from a value: what a function's key expression makes of its
parameter (`os.environ.get("SGLANG_" + name)`, `name.upper()`, an f-string, an alias
table), kept as a small template, so each call site reads the variable its argument
becomes; and what the literal parts of a key the module does not show still prove (a key
`f"NCCL_{name}"` can never be a declared `SGLANG_*` variable).

A template is a nested list of strings (JSON, so it travels in the cached facts):

- `["a"]`: the argument (the parameter the template is about);
- `["s", v, ...]`: a string the module shows, one of these values;
- `["*"]`: a part the module does not show; `["?"]`: one built from the argument in a way
  not followed (a call, `%` formatting): both may be any text;
- `["+", t, ...]`: a concatenation (`+`, an f-string);
- `["u", t]`, `["l", t]`: `t.upper()`, `t.lower()`;
- `["m", pairs, key, fallback]`: a dict constant looked up (`ALIASES[key]`,
  `ALIASES.get(key, fallback)`): pairs are `[name, value template]`, fallback a template
  or null (a missing key reads no variable);
- `["|", t, ...]`: any of these (a local bound several times).

Evaluated, a template gives patterns: an exact name, or a prefix and suffix around text
not known. A pattern that no declared variable fits reads none; an exact declared name is
that variable's read; a pattern some declared variable fits is `$?` (its name is not
shown).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from configbags.migrate.doors import ModuleStrings

Template = list[Any]
# (text, suffix, wild): an exact name (text, "", False), or text + anything + suffix
Pattern = tuple[str, str, bool]

ARG: Template = ["a"]
UNKNOWN: Template = ["*"]
DEPENDENT: Template = ["?"]
# the use of an env_params row whose key is the parameter as given
IDENTITY_USE = "environ"
_USE_PREFIX = "environ:"
_ANY: Pattern = ("", "", True)
# how many patterns one key may give before it is any text
_MAX_PATTERNS = 64
_MAX_DEPTH = 8
_CASES = {"upper": "u", "lower": "l"}


def use_of(template: Template) -> str:
    """The env_params use of a key template (`environ` for the parameter as given)."""
    if template == ARG:
        return IDENTITY_USE
    return _USE_PREFIX + json.dumps(template, separators=(",", ":"))


def template_of(use: str) -> Template | None:
    """The key template of an env_params use; None for a use that is no environment key."""
    if use == IDENTITY_USE:
        return ARG
    if use.startswith(_USE_PREFIX):
        loaded = json.loads(use[len(_USE_PREFIX):])
        return loaded if isinstance(loaded, list) else None
    return None


def depends(template: Template) -> bool:
    """Does the template use the argument at all?"""
    head = template[0]
    if head in ("a", "?"):
        return True
    if head == "m":
        return depends(template[2]) or (template[3] is not None and depends(template[3])) or any(
            depends(value) for _, value in template[1]
        )
    if head in ("+", "|", "u", "l"):
        return any(depends(part) for part in template[1:])
    return False


def substitute(template: Template, given: Template) -> Template:
    """`template` with its argument replaced by what `given` builds (a helper called with
    `"SGLANG_" + name` by a function whose own parameter is `name`)."""
    head = template[0]
    if head == "a":
        return given
    if head == "m":
        fallback = template[3]
        return ["m", [[name, substitute(value, given)] for name, value in template[1]], substitute(template[2], given),
                None if fallback is None else substitute(fallback, given)]
    if head in ("+", "|", "u", "l"):
        return [head, *(substitute(part, given) for part in template[1:])]
    return template


class KeyCompiler:
    """Compiles a key expression into a template about one parameter of one function,
    with the module's constants (ModuleStrings) resolved and the function's locals
    followed to what they are bound to. A method's `self.X` is followed into what the
    class's methods assign to it (`self.name = name` in `__init__`, so `EnvInt("X")`
    passes the key). With `field`, the argument is the field `param` of the class
    `function` (a dataclass or NamedTuple, whose generated `__init__` stores it), read
    as `self.<param>` in the class's methods."""

    def __init__(self, strings: ModuleStrings, function: ast.AST | None, param: str | None, *, field: bool = False) -> None:
        self.strings = strings
        self.function = function  # whose parameter is the argument (None: no argument)
        self.param = param
        self.field = field
        self._carriers: tuple[frozenset[str], frozenset[str]] | None = None  # (_carried_names, when first asked)

    def _carried_names(self) -> tuple[frozenset[str], frozenset[str]]:
        """The function's locals that carry part of the argument on, which its bindings
        do not show as one value: a loop's (or comprehension's) target over it, a tuple
        unpacked from it (`name, default = pair`), and on from those; over the name
        itself only (`for leaf in registry.leaves` is data the argument holds, not a key
        handed over). The second set: a target iterating `*names` itself, each of whose
        values is one argument."""
        if self._carriers is None:
            self._carriers = self._carrying_locals()
        return self._carriers

    def _carrying_locals(self) -> tuple[frozenset[str], frozenset[str]]:
        """_carried_names, computed (a walk of the whole function)."""
        function = self.function
        if self.field or self.param is None or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return frozenset(), frozenset()
        vararg = function.args.vararg.arg if function.args.vararg else None
        tainted: set[str] = set()
        elements: set[str] = set()
        links: list[tuple[ast.expr, ast.expr]] = []
        for node in ast.walk(function):
            if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                links.append((node.target, node.iter))
                if vararg == self.param and isinstance(node.iter, ast.Name) and node.iter.id == vararg:
                    elements.update(t.id for t in ast.walk(node.target) if isinstance(t, ast.Name) and t is node.target)
            elif isinstance(node, ast.Assign):
                links += [(target, node.value) for target in node.targets if isinstance(target, (ast.Tuple, ast.List))]
        carriers = {self.param}
        for _ in range(4):  # a chain of such locals, bounded
            grown = {
                t.id for target, source in links
                if isinstance(source, ast.Name) and source.id in carriers
                for t in ast.walk(target) if isinstance(t, ast.Name)
            } - carriers
            if not grown:
                break
            carriers |= grown
            tainted |= grown
        return frozenset(tainted), frozenset(elements)

    def compile(self, expr: ast.expr, enclosing: Sequence[ast.AST], depth: int = 0) -> Template:
        if depth > _MAX_DEPTH:
            return self._opaque(expr)
        carried = self._carried(expr, enclosing)
        if carried is not None:
            return carried
        if isinstance(expr, ast.Constant):
            return ["s", expr.value] if isinstance(expr.value, str) else UNKNOWN
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            return ["+", self.compile(expr.left, enclosing, depth + 1), self.compile(expr.right, enclosing, depth + 1)]
        if isinstance(expr, ast.JoinedStr):
            parts: Template = ["+"]
            for part in expr.values:
                if isinstance(part, ast.FormattedValue):
                    if part.conversion not in (-1, ord("s")) or part.format_spec is not None:
                        parts.append(self._opaque(part.value))
                        continue
                    part = part.value
                parts.append(self.compile(part, enclosing, depth + 1))
            return parts
        if isinstance(expr, ast.Call):
            return self._call(expr, enclosing, depth)
        if isinstance(expr, ast.Subscript):
            picked = self._subscript(expr, enclosing, depth)
            if picked is not None:
                return picked
        if isinstance(expr, (ast.BoolOp, ast.IfExp)):
            # `name or DEFAULT`, `a if flag else b`: either
            branches = expr.values if isinstance(expr, ast.BoolOp) else [expr.body, expr.orelse]
            return ["|", *(self.compile(branch, enclosing, depth + 1) for branch in branches)]
        values = self.strings.values(expr, enclosing)
        if values is not None:
            return ["s", *sorted(values)]
        if isinstance(expr, (ast.Name, ast.Attribute)):
            return self._bound(expr, enclosing, depth)
        return self._opaque(expr)

    def _call(self, expr: ast.Call, enclosing: Sequence[ast.AST], depth: int) -> Template:
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr in _CASES and not expr.args and not expr.keywords:
            return [_CASES[func.attr], self.compile(func.value, enclosing, depth + 1)]
        if isinstance(func, ast.Name) and func.id == "str" and len(expr.args) == 1 and not expr.keywords:
            return self.compile(expr.args[0], enclosing, depth + 1)
        if (
            isinstance(func, ast.Attribute) and func.attr == "get" and 1 <= len(expr.args) <= 2 and not expr.keywords
            and not any(isinstance(arg, ast.Starred) for arg in expr.args)
        ):
            table = self._table(func.value, enclosing)
            if table is not None:
                # `ALIASES.get(name, name)`: the table's value, else the fallback (none: no key)
                fallback = self.compile(expr.args[1], enclosing, depth + 1) if len(expr.args) == 2 else None
                return ["m", table, self.compile(expr.args[0], enclosing, depth + 1), fallback]
        return self._opaque(expr)

    def _subscript(self, expr: ast.Subscript, enclosing: Sequence[ast.AST], depth: int) -> Template | None:
        """`ALIASES[key]` of a dict constant, `NAMES[index]` of a list (any of its
        elements); None for any other subscript."""
        table = self._table(expr.value, enclosing)
        if table is not None:
            return ["m", table, self.compile(expr.slice, enclosing, depth + 1), None]
        elements = self._sequence(expr.value, enclosing)
        if elements is not None and self.strings.values(expr, enclosing) is None:
            return ["|", *(self.compile(element, where, depth + 1) for element, where in elements)]
        return None

    def _table(self, expr: ast.expr, enclosing: Sequence[ast.AST]) -> list[list[Any]] | None:
        """The pairs of the dict constant `expr` names (every key a string the module
        shows), or None."""
        bound = [(expr, enclosing)] if isinstance(expr, ast.Dict) else self.strings.bound(expr, enclosing)
        if not bound or len(bound) != 1 or not isinstance(bound[0][0], ast.Dict):
            return None
        table, where = bound[0]
        assert isinstance(table, ast.Dict)
        pairs: list[list[Any]] = []
        for key, value in zip(table.keys, table.values, strict=True):
            name = self.strings.value(key, where) if key is not None else None
            if name is None:
                return None  # `{**other}` or a key not shown: any name may be in it
            pairs.append([name, self.compile(value, where, _MAX_DEPTH)])
        return pairs

    def _sequence(self, expr: ast.expr, enclosing: Sequence[ast.AST]) -> list[tuple[ast.expr, Sequence[ast.AST]]] | None:
        """The elements of the list or tuple constant `expr` names, or None."""
        bound = [(expr, enclosing)] if isinstance(expr, (ast.List, ast.Tuple)) else self.strings.bound(expr, enclosing)
        if not bound or len(bound) != 1 or not isinstance(bound[0][0], (ast.List, ast.Tuple)):
            return None
        sequence, where = bound[0]
        assert isinstance(sequence, (ast.List, ast.Tuple))
        if not sequence.elts or any(isinstance(element, ast.Starred) for element in sequence.elts):
            return None
        return [(element, where) for element in sequence.elts]

    def _bound(self, expr: ast.Name | ast.Attribute, enclosing: Sequence[ast.AST], depth: int) -> Template:
        """A local (or `self.X`) followed to every value it is bound to."""
        bound = self.strings.bound(expr, enclosing)
        if not bound:
            return self._opaque(expr)
        alternatives: Template = ["|"]
        for value, where in bound:
            alternatives.append(UNKNOWN if value is None else self.compile(value, where, depth + 1))
        return alternatives if len(alternatives) > 2 else alternatives[1]

    def _carried(self, expr: ast.expr, enclosing: Sequence[ast.AST]) -> Template | None:
        """The argument itself, or a local carrying part of it (_carried_names); else None."""
        if self._is_argument(expr, enclosing):
            return ARG
        if isinstance(expr, ast.Name) and self.function in enclosing:
            tainted, elements = self._carried_names()
            if expr.id in tainted:
                return ARG if expr.id in elements else DEPENDENT
        return None

    def _is_argument(self, expr: ast.expr, enclosing: Sequence[ast.AST]) -> bool:
        if self.field:
            return self._field_read(expr, enclosing)
        return isinstance(expr, ast.Name) and expr.id == self.param and self.function in enclosing

    def _field_read(self, expr: ast.expr, enclosing: Sequence[ast.AST]) -> bool:
        """`self.<field>` in a method of the field's class."""
        if not (isinstance(expr, ast.Attribute) and expr.attr == self.param and isinstance(expr.value, ast.Name)):
            return False
        method = enclosing[-1] if enclosing else None
        return (
            len(enclosing) > 1 and enclosing[-2] is self.function and isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
            and bool(method.args.args) and method.args.args[0].arg == expr.value.id
        )

    def _opaque(self, expr: ast.expr) -> Template:
        """A part not followed: built from the argument, or not."""
        if self.param is not None and any(
            isinstance(sub, ast.Attribute) and sub.attr == self.param if self.field
            else isinstance(sub, ast.Name) and sub.id == self.param
            for sub in ast.walk(expr)
        ):
            return DEPENDENT
        return UNKNOWN


def patterns(template: Template, argument: frozenset[str] | None) -> frozenset[Pattern]:
    """The names a template may give with the argument's values (None: not shown)."""
    head = template[0]
    if head == "a":
        return frozenset({_ANY}) if argument is None else frozenset((value, "", False) for value in argument)
    if head == "s":
        return frozenset((value, "", False) for value in template[1:])
    if head == "+":
        found: frozenset[Pattern] = frozenset({("", "", False)})
        for part in template[1:]:
            found = _capped(_cat(a, b) for a in found for b in patterns(part, argument))
        return found
    if head in ("u", "l"):
        case = str.upper if head == "u" else str.lower
        return frozenset((case(text), case(suffix), wild) for text, suffix, wild in patterns(template[1], argument))
    if head == "|":
        return _capped(p for part in template[1:] for p in patterns(part, argument))
    if head == "m":
        table = {str(name): value for name, value in template[1]}
        fallback = template[3]
        picked: list[Pattern] = []
        for text, suffix, wild in patterns(template[2], argument):
            if wild:
                chosen = [value for name, value in table.items() if name.startswith(text) and name.endswith(suffix)]
                picked += [p for value in chosen for p in patterns(value, argument)]
            elif text in table:
                picked += patterns(table[text], argument)
                continue
            if fallback is not None:
                picked += patterns(fallback, argument)
        return _capped(picked)
    return frozenset({_ANY})


def _cat(a: Pattern, b: Pattern) -> Pattern:
    (a_text, a_suffix, a_wild), (b_text, b_suffix, b_wild) = a, b
    if not a_wild:
        return (a_text + b_text, b_suffix, b_wild)
    return (a_text, b_suffix if b_wild else a_suffix + b_text, True)


def _capped(found: Iterable[Pattern]) -> frozenset[Pattern]:
    result = frozenset(found)
    return result if len(result) <= _MAX_PATTERNS else frozenset({_ANY})


def fits(pattern: Pattern, name: str) -> bool:
    """Could the pattern give `name`?"""
    text, suffix, wild = pattern
    if not wild:
        return text == name
    return len(name) >= len(text) + len(suffix) and name.startswith(text) and name.endswith(suffix)


def declared_reads(found: Iterable[Pattern], declared: frozenset[str]) -> tuple[list[str], bool]:
    """(the declared variables read by name, whether some may be read by a name not
    shown): a pattern no declared variable fits reads none of them."""
    names: set[str] = set()
    unresolved = False
    for pattern in found:
        if not pattern[2]:
            if pattern[0] in declared:
                names.add(pattern[0])
        elif not unresolved and any(fits(pattern, name) for name in declared):
            unresolved = True
    return sorted(names), unresolved
