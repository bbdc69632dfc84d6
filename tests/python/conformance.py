"""Conformance check: lcp's static schemas against a pydantic runtime reference.

lcp reads Python tool files without running them and exports, for every
``tool_*`` function, a JSON Schema of its parameters.  This script checks those
schemas against what the function really accepts at runtime:

1. It reads lcp's manifest (``lcp export --format manifest FOLDER``) from a
   path argument or stdin (``-``).
2. For every tool it imports the tool's file under a private module name and
   builds a *reference*: a pydantic model made from ``inspect.signature`` and
   ``typing.get_type_hints`` (``*args``, ``**kwargs`` and host-injected names
   skipped; ``extra="forbid"`` unless the function takes ``**kwargs``).
3. It checks the exported ``parameters`` schema is valid Draft 2020-12 and
   builds a ``jsonschema`` validator for it, with format assertion on.
4. It derives payloads from the exported schema, deterministically: valid
   instances (all parameters, required only, schema defaults) and mutations
   (missing and extra keys, wrong types, numbers around each bound, lengths
   around each limit, pattern and format mismatches, enum non-members, wrong
   tuple lengths, duplicates for ``uniqueItems``, nested mistakes).
5. Each payload is validated by both sides: pydantic
   (``model_validate_json(text, strict=True)``) and the JSON Schema.  Equal
   verdicts agree.  A payload pydantic accepts but the schema rejects is
   accepted only when every schema error is one of the documented semantic
   gaps (see ``explain_gap``): the exported schema is the contract, so it may
   be stricter than pydantic exactly there and nowhere else.  Everything else
   is a disagreement, reported with the payload and both verdicts.

Exit status: 1 if any payload disagrees, a schema is invalid, a tool cannot be
imported or its reference cannot be built, or no tool was checked; else 0.

Usage: python tests/python/conformance.py [-v] MANIFEST.json|-
"""

from __future__ import annotations

import argparse
import collections.abc
import dataclasses
import datetime
import decimal
import ipaddress
import functools
import importlib.machinery
import importlib.util
import inspect
import itertools
import json
import math
import re
import re._parser as regex_parser  # stdlib; used only to build example strings
import sys
import types
import typing
from pathlib import Path
from typing import Any

import pydantic
import pydantic.fields
import typing_extensions
from jsonschema import Draft202012Validator, FormatChecker, validators
from jsonschema.exceptions import SchemaError, ValidationError

HOST_INJECTED = frozenset(
    {"discussion_instance", "lollms_client_instance", "tool_context", "user_interaction_handler"}
)
VALID_DEPTH = 3  # below this nesting, valid instances fill only required fields
MUTATION_DEPTH = 2  # containers nested deeper than this keep their values
EXTRA_KEY = "unexpected_key"
MISSING = object()


# --------------------------------------------------------------------------
# Manifest and imports


def load_manifest(source: str) -> dict:
    text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    return json.loads(text)


class ModuleLoader:
    """Imports tool files once each, under private unique module names.

    A file inside a library folder ``X/`` that has ``X/X.py`` becomes a member
    of a private package whose path is ``X/``, so ``from . import helper``
    works and two libraries' ``helper.py`` never meet.
    """

    def __init__(self) -> None:
        self._modules: dict[Path, types.ModuleType] = {}
        self._packages: dict[Path, str] = {}
        self._ids = itertools.count()

    def load(self, path: Path) -> types.ModuleType:
        path = path.resolve()
        if path not in self._modules:
            self._modules[path] = self._import(path)
        return self._modules[path]

    def _import(self, path: Path) -> types.ModuleType:
        folder = path.parent
        if (folder / f"{folder.name}.py").is_file():
            name = f"{self._package(folder)}.{path.stem}"
        else:
            name = f"_lcp_conformance_{next(self._ids)}_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        # Registered before running: dataclasses and pydantic look classes'
        # modules up in sys.modules to resolve string annotations.
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        return module

    def _package(self, folder: Path) -> str:
        if folder not in self._packages:
            name = f"_lcp_conformance_pkg_{next(self._ids)}"
            spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
            spec.submodule_search_locations = [str(folder)]
            sys.modules[name] = importlib.util.module_from_spec(spec)
            self._packages[folder] = name
        return self._packages[folder]


# --------------------------------------------------------------------------
# Runtime reference (pydantic)


@dataclasses.dataclass
class Reference:
    model: type[pydantic.BaseModel]
    fields: dict[str, str]  # parameter name -> model field name
    keywords: frozenset[str] = frozenset()  # the keys of an unpacked `**kwargs: Unpack[TD]`


def build_reference(fn: Any) -> Reference:
    """A strict pydantic model of the parameters the host passes to ``fn``."""
    hints = typing.get_type_hints(fn, include_extras=True)
    definitions: dict[str, Any] = {}
    fields: dict[str, str] = {}
    takes_kwargs = False
    for index, param in enumerate(inspect.signature(fn).parameters.values()):
        if param.kind is param.VAR_KEYWORD:
            unpacked = unpacked_typed_dict(hints.get(param.name))
            if unpacked is None:
                takes_kwargs = True
                continue
            # PEP 692: `**kwargs: Unpack[TD]` takes exactly TD's keys, each
            # optional unless TD requires it.
            field_hints = typing.get_type_hints(unpacked, include_extras=True)
            for offset, (key, hint) in enumerate(field_hints.items()):
                field = f"k{index}_{offset}"
                fields[key] = field
                default = ... if key in unpacked.__required_keys__ else None
                definitions[field] = (strip_required(hint), pydantic.Field(default, alias=key))
            continue
        if param.kind is param.VAR_POSITIONAL or param.name in HOST_INJECTED:
            continue
        # Fields get neutral names and the parameter's name (or its own
        # `Field` alias) as alias, so parameters such as `_x`, `model_config`
        # or `json` cannot clash with pydantic's own attributes.
        annotation = reference_annotation(param, hints)
        info = field_info(param, hints)
        key = field_alias(info) or param.name
        if isinstance(param.default, pydantic.fields.FieldInfo):
            # `x: int = Field(1, ge=0)`: the Field is what pydantic reads.
            annotation, given = typing.Annotated[annotation, param.default], {}
        elif param.default is param.empty:
            given = {}  # required, unless an `Annotated[T, Field(default=...)]` says otherwise
        else:
            given = {"default": param.default}
        field = f"p{index}"
        fields[key] = field
        definitions[field] = (annotation, pydantic.Field(alias=key, **given))
    config = pydantic.ConfigDict(extra="allow" if takes_kwargs else "forbid")
    model = pydantic.create_model(f"{fn.__name__}__reference", __config__=config, **definitions)
    keywords = frozenset(key for key, field in fields.items() if field.startswith("k"))
    return Reference(model, fields, keywords)


def field_info(param: inspect.Parameter, hints: dict[str, Any]) -> pydantic.fields.FieldInfo | None:
    """The pydantic ``FieldInfo`` of a parameter: its default, else its last ``Annotated`` one."""
    if isinstance(param.default, pydantic.fields.FieldInfo):
        return param.default
    hint = hints.get(param.name)
    if typing.get_origin(hint) is typing.Annotated:
        infos = [meta for meta in hint.__metadata__ if isinstance(meta, pydantic.fields.FieldInfo)]
        return infos[-1] if infos else None
    return None


def field_alias(info: pydantic.fields.FieldInfo | None) -> str | None:
    """The name a caller gives the value of a field: its string validation alias, else its alias."""
    if info is None:
        return None
    return info.validation_alias if isinstance(info.validation_alias, str) else info.alias


def unpacked_typed_dict(hint: Any) -> Any:
    """``TD`` of ``Unpack[TD]`` when TD is a TypedDict, else None."""
    if typing.get_origin(hint) in (typing.Unpack, typing_extensions.Unpack):
        (target,) = typing.get_args(hint)
        if typing_extensions.is_typeddict(target):
            return target
    return None


def strip_required(hint: Any) -> Any:
    """``T`` of ``Required[T]`` / ``NotRequired[T]`` (meaningful only inside a TypedDict)."""
    markers = (typing.Required, typing.NotRequired, typing_extensions.Required, typing_extensions.NotRequired)
    return typing.get_args(hint)[0] if typing.get_origin(hint) in markers else hint


def reference_annotation(param: inspect.Parameter, hints: dict[str, Any]) -> Any:
    if param.name in hints:
        annotation = eager_iterables(hints[param.name])
    elif param.default is param.empty or param.default is None:
        annotation = str  # the LCP convention for unannotated parameters
    else:
        annotation = type(param.default)
    # SPEC §3: a `None` default (`= None`, `= Field(None)`) makes the parameter
    # nullable whatever its annotation says; the function receives None when it
    # is omitted anyway.
    if param.default is None or (
        isinstance(param.default, pydantic.fields.FieldInfo) and param.default.default is None
    ):
        annotation = typing.Optional[annotation]
    return annotation


def eager_iterables(annotation: Any) -> Any:
    """Replace ``Iterable[T]`` with ``list[T]`` inside a parameter annotation.

    Gap: pydantic validates ``Iterable[T]`` lazily (it returns a generator,
    checks items non-strictly only while it is consumed, and accepts a string
    as an iterable).  SPEC §3 maps ``Iterable[T]`` to ``array, items: T``,
    which is exactly how pydantic validates ``list[T]``.  Only parameter
    annotations are rewritten, not fields of nested classes.
    """
    if annotation is collections.abc.Iterable:
        return list
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is None or origin is typing.Literal:
        return annotation
    if origin is collections.abc.Iterable:
        return list[eager_iterables(args[0])] if args else list
    if origin is typing.Annotated:
        return typing.Annotated[(eager_iterables(args[0]), *annotation.__metadata__)]
    new_args = tuple(eager_iterables(arg) for arg in args)
    if new_args == args:
        return annotation
    if origin in (typing.Union, types.UnionType):
        return typing.Union[new_args]
    return origin[new_args]


# --------------------------------------------------------------------------
# lcp side (jsonschema)

# The offset is optional: lcp's validation and pydantic read a time without one.
_TIME = r"(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))?"
_DUR_TIME = r"T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)"
_DURATION = rf"P(?:\d+W|(?:\d+D|\d+M(?:\d+D)?|\d+Y(?:\d+M(?:\d+D)?)?)(?:{_DUR_TIME})?|{_DUR_TIME})"


def _is_rfc3339_date(text: str) -> bool:
    try:
        return bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}", text)) and bool(datetime.date.fromisoformat(text))
    except ValueError:
        return False


def _is_rfc3339_time(text: str) -> bool:
    match = re.fullmatch(_TIME, text)
    if not match:
        return False
    hour, minute, second, off_hour, off_minute = (int(g or 0) for g in match.groups())
    return hour < 24 and minute < 60 and second <= 60 and off_hour < 24 and off_minute < 60


def _is_rfc3339_date_time(text: str) -> bool:
    date, sep, time = text.partition("T") if "T" in text else text.partition("t")
    return bool(sep) and _is_rfc3339_date(date) and _is_rfc3339_time(time)


@functools.cache
def format_checker() -> FormatChecker:
    """Draft 2020-12's format checker, completed with stdlib checks.

    Gap: jsonschema asserts `date-time`, `time` and `duration` only when the
    optional packages rfc3339-validator / isoduration are installed; without
    them those formats silently pass, and lcp's `format` claims could not be
    tested.  The missing ones are filled in from RFC 3339 (incl. Appendix A), the
    offset optional as lcp's validation and pydantic read it;
    checks jsonschema already has are kept as they are.
    """
    checker = FormatChecker(formats=())
    checker.checkers = dict(Draft202012Validator.FORMAT_CHECKER.checkers)
    fallbacks = {
        "date-time": _is_rfc3339_date_time,
        "time": _is_rfc3339_time,
        "duration": lambda text: bool(re.fullmatch(_DURATION, text)),
    }
    for name, check in fallbacks.items():
        if name not in checker.checkers:
            checker.checks(name)(lambda value, check=check: not isinstance(value, str) or check(value))
    # lcp checks `email` and `uri` as pydantic checks EmailStr and AnyUrl (what
    # jsonschema has for them is a test for "@" and, without rfc3987, nothing): the
    # checks its validation makes are what the schema promises.
    pydantic_checks = {"email": pydantic.EmailStr, "uri": pydantic.AnyUrl}
    for name, kind in pydantic_checks.items():
        adapter = pydantic.TypeAdapter(kind)
        checker.checkers.pop(name, None)
        checker.checks(name)(lambda value, adapter=adapter: not isinstance(value, str) or _accepts(adapter, value))
    return checker


def _accepts(adapter: pydantic.TypeAdapter, value: str) -> bool:
    try:
        adapter.validate_json(json.dumps(value), strict=True)
        return True
    except pydantic.ValidationError:
        return False


def _content(validator: Any, media_type: Any, instance: Any, schema: dict) -> Any:
    """`contentMediaType: application/json` (and `contentSchema`) as lcp asserts
    them: the text is a JSON document, valid against the content schema."""
    if media_type != "application/json" or not isinstance(instance, str):
        return
    try:
        document = json.loads(instance)
    except ValueError:
        yield ValidationError(f"{instance!r} is not JSON text")
        return
    if "contentSchema" in schema:
        yield from validator.descend(document, schema["contentSchema"], schema_path="contentSchema")


# Draft 2020-12 with content assertion on, as lcp's validation (jsonschema only
# annotates `contentMediaType` / `contentSchema`).
ContentValidator = validators.extend(Draft202012Validator, {"contentMediaType": _content})


def build_validator(schema: Any) -> Draft202012Validator:
    Draft202012Validator.check_schema(schema)
    return ContentValidator(schema, format_checker=format_checker())


# --------------------------------------------------------------------------
# Payload generation (from the exported schema)

FORMAT_SAMPLES = {
    "date-time": ("2024-01-02T03:04:05Z", "2024-01-02T25:00:00Z"),
    "date": ("2024-01-02", "2024-13-45"),
    "time": ("03:04:05Z", "25:61:00Z"),
    "duration": ("P1DT2H3M4S", "one day"),
    "uuid": ("12345678-1234-5678-1234-567812345678", "not-a-uuid"),
    "email": ("someone@example.com", "someone@localhost"),
    "uri": ("https://example.com/a?b=c", "https://exa mple.com/"),
    "ipv4": ("192.0.2.1", "192.0.2.256"),
    "ipv6": ("2001:db8::1", "2001:db8:::1"),
}
# Further valid values of a format, tried when the first breaks another keyword.
FORMAT_ALTERNATIVES = {
    "uri": ("file:///tmp/a.txt", "mailto:someone@example.com"),
    "date-time": ("2024-01-02T03:04:05",),
}
WRONG_TYPES = {
    "string": (("int for string", 1), ("list for string", ["text"])),
    "integer": (("string for integer", "1"), ("float for integer", 1.5), ("bool for integer", True)),
    "number": (("string for number", "1.5"), ("bool for number", True)),
    "boolean": (("int for boolean", 1), ("string for boolean", "true")),
    "array": (("string for array", "text"), ("object for array", {})),
    "object": (("string for object", "text"), ("list for object", [])),
    "null": (("int for null", 0),),
}
ANY_SAMPLES = ("text", 1, 2.5, True, None, [], {})
BOUNDS = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")
ANNOTATIONS = {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment"}


class Unsatisfiable(Exception):
    """No value satisfying a (sub)schema could be generated."""


def accepts_anything(schema: Any) -> bool:
    """True for `true`, `{}` and schemas made only of annotations."""
    return schema is True or isinstance(schema, dict) and not schema.keys() - ANNOTATIONS


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def regex_example(pattern: str, repeat: int) -> str | None:
    """A string built from the regex, each repetition taken ``repeat`` times
    (clamped to its bounds); None when the regex is beyond this simple walk.
    Callers keep it only if the schema accepts it."""

    def emit(items: Any) -> str:
        out = []
        for op, arg in items:
            name = str(op)
            if name == "LITERAL":
                out.append(chr(arg))
            elif name == "ANY":
                out.append("a")
            elif name == "NOT_LITERAL":
                out.append("b" if chr(arg) == "a" else "a")
            elif name == "IN":
                out.append(char_in(arg))
            elif name in ("MAX_REPEAT", "MIN_REPEAT"):
                low, high, sub = arg
                out.append(emit(sub) * min(max(low, repeat), high))
            elif name == "SUBPATTERN":
                out.append(emit(arg[-1]))
            elif name == "BRANCH":
                out.append(emit(arg[1][0]))
            elif name == "CATEGORY":
                out.append(char_in([(op, arg)]))
            elif name != "AT":
                raise ValueError(name)
        return "".join(out)

    def char_in(items: Any) -> str:
        op, arg = items[0]
        kind = str(op)
        if kind == "NEGATE":
            return "~"
        if kind == "LITERAL":
            return chr(arg)
        if kind == "RANGE":
            return chr(arg[0])
        return {"CATEGORY_DIGIT": "0", "CATEGORY_SPACE": " "}.get(str(arg), "a")

    try:
        return emit(regex_parser.parse(pattern))
    except (re.error, ValueError, IndexError):
        return None


def child(part: str, label: str) -> str:
    """Prefix a mutation label with the path part leading to it."""
    return part + label if label[:1] in (".", "[") else f"{part}: {label}"


def pad(text: str, length: int) -> str:
    return (text * (length // max(len(text), 1) + 1))[:length] if text else "a" * length


class PayloadGenerator:
    """Valid instances and mutations derived from one tool's exported schema."""

    def __init__(self, validator: Draft202012Validator) -> None:
        self._validator = validator
        self.root = validator.schema

    # -- schema helpers

    def resolve(self, schema: Any) -> Any:
        for _ in range(64):
            if not isinstance(schema, dict) or "$ref" not in schema:
                return schema
            ref = schema["$ref"]
            if not ref.startswith("#"):
                raise Unsatisfiable(f"external $ref {ref}")
            target = self.root
            for part in ref[1:].split("/")[1:]:
                try:
                    target = target[part.replace("~1", "/").replace("~0", "~")]
                except (KeyError, TypeError):
                    raise Unsatisfiable(f"unresolvable $ref {ref}") from None
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        raise Unsatisfiable("$ref chain too long")

    def accepts(self, schema: Any, value: Any) -> bool:
        return self._validator.evolve(schema=schema).is_valid(value)

    @staticmethod
    def types_of(schema: dict) -> list[str]:
        declared = schema.get("type")
        if declared is not None:
            return [declared] if isinstance(declared, str) else list(declared)
        if {"properties", "required", "additionalProperties"} & schema.keys():
            return ["object"]
        if {"items", "prefixItems"} & schema.keys():
            return ["array"]
        return []

    # -- valid instances

    def valid(self, schema: Any, depth: int = 0) -> Any:
        schema = self.resolve(schema)
        if schema is False:
            raise Unsatisfiable("schema is false")
        for candidate in self._candidates(schema, depth):
            if self.accepts(schema, candidate):
                return candidate
        raise Unsatisfiable(f"no valid value for {canonical(schema)}")

    def _candidates(self, schema: Any, depth: int) -> collections.abc.Iterator[Any]:
        if accepts_anything(schema):
            yield from ANY_SAMPLES
            return
        if "const" in schema:
            yield schema["const"]
        yield from schema.get("enum", ())
        for keyword in ("anyOf", "oneOf"):
            branches = schema.get(keyword, ())
            if depth >= VALID_DEPTH:  # prefer null to end recursion
                branches = sorted(branches, key=lambda b: self.resolve(b) != {"type": "null"})
            for branch in branches:
                try:
                    yield self.valid(branch, depth)
                except Unsatisfiable:
                    pass
        if "allOf" in schema:
            merged = {k: v for k, v in schema.items() if k != "allOf"}
            for part in schema["allOf"]:
                merged.update(self.resolve(part))
            yield from self._candidates(merged, depth)
        kinds = self.types_of(schema)
        for kind in sorted(kinds, key=lambda k: k == "null"):
            yield from getattr(self, f"_valid_{kind}")(schema, depth)
        if not kinds and not {"enum", "const", "anyOf", "oneOf", "allOf"} & schema.keys():
            yield from ANY_SAMPLES

    def _valid_null(self, schema: dict, depth: int) -> list:
        return [None]

    def _valid_boolean(self, schema: dict, depth: int) -> list:
        return [True, False]

    def _valid_integer(self, schema: dict, depth: int) -> list:
        return [int(c) for c in self._valid_number(schema, depth) if float(c).is_integer()]

    def _valid_number(self, schema: dict, depth: int) -> list:
        # Values well inside the bounds come first, so that the boundary
        # mutations of one parameter are the only boundary values in a payload.
        lows = [schema[k] for k in ("minimum", "exclusiveMinimum") if k in schema]
        highs = [schema[k] for k in ("maximum", "exclusiveMaximum") if k in schema]
        if lows and highs:
            middle = (max(lows) + min(highs)) / 2
            candidates = [middle, math.floor(middle), math.ceil(middle)]
        else:
            candidates = [max(lows) + 2] if lows else [min(highs) - 2] if highs else []
        candidates += [1, 2, 5, 0, 10, -1]
        for bound in lows + highs:
            candidates += [bound + 1, bound - 1, bound + 0.5, bound - 0.5, bound]
        step = schema.get("multipleOf")
        if step:
            candidates = [math.ceil(c / step) * step for c in candidates] + [step, 2 * step]
        return candidates

    def _valid_string(self, schema: dict, depth: int) -> collections.abc.Iterator[str]:
        if schema.get("contentMediaType") == "application/json":
            yield json.dumps(self.valid(schema.get("contentSchema", {}), depth + 1))
        if schema.get("format") in FORMAT_SAMPLES:
            yield FORMAT_SAMPLES[schema["format"]][0]
            yield from FORMAT_ALTERNATIVES.get(schema["format"], ())
        if "pattern" in schema:
            for repeat in (1, 2, 3, 4, 6, 8, 0, 12, 16):
                example = regex_example(schema["pattern"], repeat)
                if example is not None:
                    yield example
        yield "text"
        low, high = schema.get("minLength", 0), schema.get("maxLength", 8)
        for length in (low, high, (low + high) // 2):
            yield "a" * length

    def _valid_array(self, schema: dict, depth: int) -> collections.abc.Iterator[list]:
        items = schema.get("items", {})
        low = schema.get("minItems", 0)
        value = [self.valid(p, depth + 1) for p in schema.get("prefixItems", ())]
        if "prefixItems" not in schema:
            count = max(low, 0 if depth >= VALID_DEPTH else 1)
            count = min(count, schema.get("maxItems", count))
            value = self.distinct(items, count, depth) if count else []
        elif len(value) < low and items is not False:
            value += self.distinct(items, low - len(value), depth)
        yield value
        yield []

    def _valid_object(self, schema: dict, depth: int) -> collections.abc.Iterator[dict]:
        yield self.object_instance(schema, depth, only_required=depth >= VALID_DEPTH)
        yield self.object_instance(schema, depth, only_required=True)

    def object_instance(self, schema: dict, depth: int, only_required: bool) -> dict:
        schema = self.resolve(schema)
        props = schema.get("properties", {})
        required = schema.get("required", [])
        value = {}
        for name in dict.fromkeys([*props, *required]):
            if only_required and name not in required:
                continue
            try:
                value[name] = self.valid(props.get(name, {}), depth + 1)
            except Unsatisfiable:
                if name in required:
                    raise
        extra = schema.get("additionalProperties")
        if not props and isinstance(extra, dict) and not accepts_anything(extra) and depth < VALID_DEPTH:
            value["key"] = self.valid(extra, depth + 1)
        return value

    def distinct(self, schema: Any, count: int, depth: int) -> list:
        """``count`` pairwise different valid values (fewer if none exist)."""
        schema = self.resolve(schema)
        found: dict[str, Any] = {}
        pool = itertools.chain([self.valid(schema, depth + 1)], self._candidates(schema, depth + 1))
        for value in pool:
            if len(found) == count:
                break
            if self.accepts(schema, value):
                found.setdefault(canonical(value), value)
        return list(found.values())

    # -- mutations

    def variants(self, schema: Any, value: Any, depth: int) -> list[tuple[str, Any]]:
        """Alternative values for one spot currently holding the valid ``value``."""
        schema = self.resolve(schema)
        if accepts_anything(schema):
            return [(f"any value: {canonical(v)}", v) for v in ANY_SAMPLES]
        out: list[tuple[str, Any]] = []
        for keyword in ("anyOf", "oneOf"):
            members = {}
            for index, branch in enumerate(schema.get(keyword, ())):
                try:
                    members[index] = (branch, self.valid(branch, depth))
                except Unsatisfiable:
                    continue
            taken = {canonical(member) for _, member in members.values()}
            for index, (branch, member) in members.items():
                out.append((f"{keyword}[{index}] member", member))
                out += [v for v in self.variants(branch, member, depth) if canonical(v[1]) not in taken]
        if "enum" in schema:
            out += self._enum_variants(schema["enum"])
        kinds = self.types_of(schema)
        for kind in kinds:
            out += [pair for pair in WRONG_TYPES[kind] if not self._has_type(pair[1], kinds)]
            mutate = getattr(self, f"_mutate_{kind}", None)
            if mutate is not None and self._has_type(value, [kind]):
                out += mutate(schema, value, depth)
        if kinds and "null" not in kinds:
            out.append(("null for non-nullable", None))
        return out

    def _has_type(self, value: Any, kinds: list[str]) -> bool:
        return any(self._validator.is_type(value, kind) for kind in kinds)

    @staticmethod
    def _enum_variants(members: list) -> list[tuple[str, Any]]:
        def present(candidate: Any) -> bool:
            return any(type(m) is type(candidate) and m == candidate for m in members)

        numbers = [m for m in members if type(m) in (int, float)]
        candidates = [("string non-member", "not-a-member"), ("list for enum", [])]
        if numbers:
            candidates += [("number non-member", max(numbers) + 100), ("bool for number member", True)]
        if None not in members:
            candidates.append(("null non-member", None))
        return [(label, c) for label, c in candidates if not present(c)]

    def _mutate_integer(self, schema: dict, value: int, depth: int) -> list[tuple[str, Any]]:
        return self._mutate_bounds(schema, value, integer=True)

    def _mutate_number(self, schema: dict, value: float, depth: int) -> list[tuple[str, Any]]:
        return self._mutate_bounds(schema, value, integer=False)

    @staticmethod
    def _mutate_bounds(schema: dict, value: Any, integer: bool) -> list[tuple[str, Any]]:
        out = []
        for key in BOUNDS:
            if key in schema:
                bound = schema[key]
                if integer and not float(bound).is_integer():
                    near = [math.floor(bound), math.ceil(bound)]
                else:
                    step = 1 if integer else 0.5
                    near = [bound - step, bound, bound + step]
                out += [(f"{key} {bound}: {x}", x) for x in near]
        step = schema.get("multipleOf")
        if step and isinstance(value, (int, float)):
            off = 1 if integer and step != 1 else step / 2
            out.append((f"not a multiple of {step}", value + off))
        return out

    def _mutate_string(self, schema: dict, value: str, depth: int) -> list[tuple[str, Any]]:
        out = []
        if "minLength" in schema:
            low = schema["minLength"]
            out += [(f"length {n} (minLength {low})", pad(value, n)) for n in (low - 1, low) if n >= 0]
        if "maxLength" in schema:
            high = schema["maxLength"]
            out += [(f"length {n} (maxLength {high})", pad(value, n)) for n in (high, high + 1)]
        if "pattern" in schema:
            for candidate in ("~", "", "0", "a", "A", "a b", value + "~", "~" + value):
                if not re.search(schema["pattern"], candidate):
                    out.append((f"pattern mismatch {schema['pattern']!r}", candidate))
                    break
        if schema.get("format") in FORMAT_SAMPLES:
            out.append((f"malformed {schema['format']}", FORMAT_SAMPLES[schema["format"]][1]))
        if schema.get("contentMediaType") == "application/json":
            out.append(("not JSON text", "{not json"))
            content = schema.get("contentSchema")
            if content is not None and depth < MUTATION_DEPTH:
                document = json.loads(value)
                out += [(child(" (JSON)", label), json.dumps(v)) for label, v in self.variants(content, document, depth + 1)]
        return out

    def _mutate_array(self, schema: dict, value: list, depth: int) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = [("empty array", [])] if value else []
        prefix = schema.get("prefixItems")
        items = schema.get("items", {})
        if prefix is not None:
            if value:
                out += [("tuple too short", value[:-1]), ("tuple too long", value + value[-1:])]
            if depth < MUTATION_DEPTH:
                for index, item_schema in enumerate(prefix[: len(value)]):
                    for label, item in self.variants(item_schema, value[index], depth + 1):
                        out.append((child(f"[{index}]", label), value[:index] + [item] + value[index + 1 :]))
            return out
        if accepts_anything(self.resolve(items)):
            out.append(("mixed items", ["text", 1, None]))
            return out
        sample = value[0] if value else self.valid(items, depth + 1)
        if depth < MUTATION_DEPTH:
            out += [(child("[0]", label), [item] + value[1:]) for label, item in self.variants(items, sample, depth + 1)]
        if schema.get("uniqueItems"):
            out.append(("duplicate items", [sample, sample]))
        for key, delta in (("minItems", (-1, 0)), ("maxItems", (0, 1))):
            if key in schema:
                for count in (schema[key] + d for d in delta):
                    pool = self.distinct(items, count, depth) if schema.get("uniqueItems") else [sample] * count
                    if count >= 0 and len(pool) == count:
                        out.append((f"{count} items ({key} {schema[key]})", pool))
        return out

    def _mutate_object(self, schema: dict, value: dict, depth: int) -> list[tuple[str, Any]]:
        out = []
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        required = schema.get("required", ())
        for name in required:
            if name in value:
                out.append((f"missing required {name!r}", {k: v for k, v in value.items() if k != name}))
        only_required = {k: v for k, v in value.items() if k in required or k not in props}
        if only_required != value:
            out.append(("required keys only", only_required))
        if EXTRA_KEY not in props:
            out.append((f"extra key {EXTRA_KEY!r}", {**value, EXTRA_KEY: 1}))
        if depth >= MUTATION_DEPTH:
            return out
        for name, prop in props.items():
            if name in value:
                for label, item in self.variants(prop, value[name], depth + 1):
                    out.append((child(f".{name}", label), {**value, name: item}))
        if not props and isinstance(extra, dict) and not accepts_anything(extra):
            sample = value.get("key", MISSING)
            sample = self.valid(extra, depth + 1) if sample is MISSING else sample
            for label, item in self.variants(extra, sample, depth + 1):
                out.append((child(".key", label), {"key": item}))
        return out

    # -- the payloads of one tool

    def payloads(self, reference_only: dict[str, Any]) -> list[tuple[str, Any]]:
        """Top-level payloads; ``reference_only`` maps parameters the schema
        lacks to a value valid for the reference."""
        root = self.resolve(self.root)
        full = self.object_instance(root, 0, only_required=False)
        out = [("valid: all parameters", full)]
        out.append(("valid: required parameters only", self.object_instance(root, 0, only_required=True)))
        defaults = {k: p["default"] for k, p in root.get("properties", {}).items() if "default" in p}
        if defaults:
            out.append(("schema defaults", {**full, **defaults}))
        out += [(f"parameter missing from the schema: {k!r}", {**full, k: v}) for k, v in reference_only.items()]
        out += [(child("$", label), v) for label, v in self._mutate_object(root, full, 0)]
        unique: dict[str, tuple[str, Any]] = {}
        for label, payload in out:
            unique.setdefault(canonical(payload), (label, payload))
        return list(unique.values())


def reference_only_values(reference: Reference, schema: dict) -> dict[str, Any]:
    """A valid value for each reference parameter that the schema does not list."""
    listed = schema.get("properties", {}) if isinstance(schema, dict) else {}
    missing = [name for name in reference.fields if name not in listed]
    if not missing:
        return {}
    own = reference.model.model_json_schema()
    generator = PayloadGenerator(Draft202012Validator(own, format_checker=format_checker()))
    values = {}
    for name in missing:
        try:
            values[name] = generator.valid(own["properties"][name], 1)
        except Unsatisfiable:
            values[name] = "text"
    return values


# --------------------------------------------------------------------------
# Verdicts and documented gaps


@dataclasses.dataclass
class Outcome:
    label: str
    payload: Any
    pydantic_error: str | None  # None: accepted
    schema_errors: list[ValidationError]
    gap: str | None = None

    @property
    def agrees(self) -> bool:
        return (self.pydantic_error is None) == (not self.schema_errors) or self.gap is not None


def judge(reference: Reference, validator: Draft202012Validator, label: str, payload: Any) -> Outcome:
    try:
        instance = reference.model.model_validate_json(json.dumps(payload), strict=True)
        pydantic_error = None
    except pydantic.ValidationError as error:
        instance = None
        pydantic_error = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or '$'}: {e['msg']}" for e in error.errors()
        )
    outcome = Outcome(label, payload, pydantic_error, list(validator.iter_errors(payload)))
    if instance is not None and outcome.schema_errors:
        gaps = [explain_gap(e, instance, reference) for e in outcome.schema_errors]
        if all(gaps):
            outcome.gap = ", ".join(sorted(set(gaps)))
    return outcome


def explain_gap(error: ValidationError, instance: pydantic.BaseModel, reference: Reference) -> str | None:
    """The documented gap behind a schema error on a payload pydantic accepted.

    These are the only places where the exported schema may be stricter than
    pydantic; the schema is the contract lcp enforces before Python runs.
    """
    if error.validator in ("anyOf", "oneOf"):
        # Explained when some branch fails only for documented reasons.
        branches: dict[Any, list[ValidationError]] = {}
        for sub in error.context or ():
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        for sub_errors in branches.values():
            gaps = [explain_gap(sub, instance, reference) for sub in sub_errors]
            if all(gaps):
                return gaps[0]
        return None
    if error.validator == "uniqueItems":
        # set[T] / frozenset[T]: pydantic silently drops duplicates; the
        # schema's uniqueItems rejects them, telling the caller instead.
        if isinstance(value_at(instance, error.absolute_path, reference), (set, frozenset)):
            return "set duplicates (pydantic dedups)"
        return None
    if error.validator in ("enum", "const", "type"):
        # Literal and int-valued Enum match by Python equality, where
        # True == 1 and False == 0; JSON Schema keeps booleans and numbers
        # apart, which is what a JSON caller means.  Covers the enum/const
        # error and the `type: integer` error next to such an enum.
        schema = error.schema if isinstance(error.schema, dict) else {}
        members = [*schema.get("enum", ()), *([schema["const"]] if "const" in schema else ())]
        if any(_bool_int_equal(error.instance, m) for m in members):
            return "bool/int equality (Literal, Enum)"
        if error.validator == "type":
            value = value_at(instance, error.absolute_path, reference)
            # A Decimal with bounds is a number in the schema: bounds cannot be
            # checked on text, which pydantic also reads.
            if isinstance(value, decimal.Decimal) and isinstance(error.instance, str):
                return "bounded Decimal as text (schema asks for a number)"
            # IPvAny* also read an integer; their schema (pydantic's too) is text.
            if isinstance(value, _IP_TYPES) and type(error.instance) is int:
                return "IP address as an integer (schema asks for text)"
        return None
    if error.validator == "additionalProperties" and error.absolute_path:
        # A nested model with extra="ignore" (BaseModel's default, or a
        # dataclass under a **kwargs tool) drops unknown keys silently: they
        # never reach the tool; the schema rejects them openly.
        kept = _kept_keys(value_at(instance, error.absolute_path, reference))
        unknown = set(error.instance) - set(error.schema.get("properties", {}))
        if kept is not None and unknown.isdisjoint(kept):
            return "nested unknown keys (pydantic ignores)"
    return None


_IP_TYPES = (ipaddress.IPv4Address, ipaddress.IPv6Address, ipaddress.IPv4Network, ipaddress.IPv6Network,
             ipaddress.IPv4Interface, ipaddress.IPv6Interface)


def _bool_int_equal(value: Any, member: Any) -> bool:
    return (type(value) is bool) != (type(member) is bool) and type(member) in (bool, int) and value == member


def value_at(instance: pydantic.BaseModel, path: collections.abc.Sequence, reference: Reference) -> Any:
    """The validated Python value at a JSON path of the payload."""
    try:
        head, *rest = path
        if head in reference.fields:
            value = getattr(instance, reference.fields[head])
        else:
            value = (instance.model_extra or {})[head]
        for part in rest:
            if isinstance(value, collections.abc.Mapping):
                value = value[part]
            elif isinstance(part, int) and isinstance(value, collections.abc.Sequence):
                value = value[part]
            elif isinstance(part, str):
                value = getattr(value, part)
            else:
                return MISSING
        return value
    except (ValueError, KeyError, IndexError, AttributeError):
        return MISSING


def _kept_keys(value: Any) -> set[str] | None:
    if isinstance(value, pydantic.BaseModel):
        return set(value.__dict__) | set(value.model_extra or {})
    if isinstance(value, collections.abc.Mapping):
        return set(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name for f in dataclasses.fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return set(value._fields)
    return None


# --------------------------------------------------------------------------
# Running and reporting


@dataclasses.dataclass
class ToolResult:
    name: str
    where: str
    outcomes: list[Outcome] = dataclasses.field(default_factory=list)
    failure: str | None = None


def check_tool(tool: dict, loader: ModuleLoader) -> ToolResult:
    path = Path(tool["path"])
    result = ToolResult(tool["name"], f"{path.name}:{tool.get('line', '?')}")
    try:
        validator = build_validator(tool.get("parameters"))
    except SchemaError as error:
        result.failure = f"invalid JSON Schema: {error.message} at {error.json_path}"
        return result
    try:
        fn = getattr(loader.load(path), tool["name"])
    except Exception as error:  # any import-time failure of the tool file
        result.failure = f"cannot import: {type(error).__name__}: {error}"
        return result
    try:
        reference = build_reference(fn)
    except Exception as error:  # unresolvable annotations, types pydantic rejects
        result.failure = f"cannot build the pydantic reference: {type(error).__name__}: {error}"
        return result
    try:
        generator = PayloadGenerator(validator)
        payloads = generator.payloads(reference_only_values(reference, tool["parameters"]))
    except Unsatisfiable as error:
        result.failure = f"cannot generate a valid payload from the schema: {error}"
        return result
    result.outcomes = [judge(reference, validator, label, payload) for label, payload in payloads]
    mismatches = annotations_differ(reference, tool["parameters"])
    if mismatches:
        result.failure = "; ".join(mismatches)
    return result


def annotations_differ(reference: Reference, schema: dict) -> list[str]:
    """Where a parameter's ``default`` or ``description`` differs from what pydantic
    writes for it (SPEC §3: defaults as pydantic serialises them; an explicit
    ``Field`` or ``Annotated`` description wins). Where pydantic writes no
    description, lcp's may come from the docstring."""
    own = reference.model.model_json_schema(by_alias=True).get("properties", {})
    ours = schema.get("properties", {}) if isinstance(schema, dict) else {}
    problems = []
    for key, theirs in own.items():
        mine = ours.get(key)
        # An unpacked TypedDict's keys have no default: the reference's `None` only makes them optional.
        if not isinstance(mine, dict) or key in reference.keywords:
            continue
        for keyword in ("default", "description"):
            if keyword in theirs and mine.get(keyword, MISSING) != theirs[keyword]:
                shown = mine.get(keyword, "(none)")
                problems.append(f"`{key}` {keyword}: pydantic {theirs[keyword]!r}, lcp {shown!r}")
    return problems


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def report_disagreement(result: ToolResult, outcome: Outcome) -> None:
    schema_verdict = "accepted" if not outcome.schema_errors else "rejected: " + "; ".join(
        f"{e.json_path}: {_short(e.message, 160)}" for e in outcome.schema_errors
    )
    pydantic_verdict = "accepted" if outcome.pydantic_error is None else "rejected: " + outcome.pydantic_error
    print(f"DISAGREE {result.name} ({result.where}) [{outcome.label}]")
    print(f"  payload:  {_short(canonical(outcome.payload), 600)}")
    print(f"  pydantic: {_short(pydantic_verdict)}")
    print(f"  schema:   {_short(schema_verdict)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manifest", help="lcp manifest JSON file, or - for stdin")
    parser.add_argument("-v", "--verbose", action="store_true", help="per-tool counts and gap details")
    args = parser.parse_args(argv)

    try:
        manifest = load_manifest(args.manifest)
    except (OSError, ValueError) as error:
        parser.error(f"cannot read the manifest: {error}")
    loader = ModuleLoader()
    results = [check_tool(tool, loader) for tool in manifest.get("tools", [])]

    payloads = agree = disagree = 0
    gaps: dict[str, int] = {}
    for result in results:
        if result.failure:
            print(f"FAIL {result.name} ({result.where}): {result.failure}")
        for outcome in result.outcomes:
            payloads += 1
            if not outcome.agrees:
                disagree += 1
                report_disagreement(result, outcome)
                continue
            agree += 1
            if outcome.gap:
                gaps[outcome.gap] = gaps.get(outcome.gap, 0) + 1
                if args.verbose:
                    print(f"gap {result.name} [{outcome.label}]: {outcome.gap}: {canonical(outcome.payload)}")
        if args.verbose:
            bad = sum(not o.agrees for o in result.outcomes)
            status = "FAIL" if result.failure else f"{len(result.outcomes) - bad} agree, {bad} disagree"
            print(f"  {result.name}: {len(result.outcomes)} payloads, {status}")
    for gap, count in sorted(gaps.items()):
        print(f"documented gap: {gap}: {count} payload(s)")
    failures = sum(1 for r in results if r.failure)
    print(f"conformance: {len(results)} tools, {payloads} payloads, {agree} agree, {disagree} disagree"
          + (f", {failures} failed" if failures else ""))
    if not results:
        print("conformance: no tools in the manifest; nothing was checked", file=sys.stderr)
    return 1 if disagree or failures or not results else 0


if __name__ == "__main__":
    sys.exit(main())
