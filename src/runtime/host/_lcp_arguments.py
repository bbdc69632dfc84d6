"""Arguments as Python sees them (SPEC §5), for ``host.py``: each tool's parameters
read once (``_Plan``: names, the names callers use, hints, defaults, pydantic ``Field``
defaults and aliases), and JSON arguments converted to the annotated types where that
is unambiguous (``Enum``, dataclass, ``TypedDict``, ``BaseModel``, ``tuple``, ``set``,
the ``datetime`` family, ``Path``, ``UUID``, ``Decimal``, ``ipaddress``, pydantic's own
types through pydantic). Loaded before ``host.py`` as the module ``_lcp_arguments``.
Never runs a tool, never writes to the process's standard output.
"""

import collections.abc
import dataclasses
import datetime
import decimal
import enum
import inspect
import re
import types
import typing
import uuid
import weakref
from pathlib import PurePath

_plans = weakref.WeakKeyDictionary()  # tool function -> _Plan
# The host objects a tool gets when it names them (or takes ``**kwargs``), SPEC §9.
_HOST_OBJECTS = ("user_interaction_handler", "lollms_client_instance", "tool_context")

class _ArgumentError(Exception):
    pass


class _Plan:
    """A tool's parameters as Python sees them, computed once per function.

    Each parameter is ``(name, key, kind, hint, default)``: ``key`` is the argument's
    name in the call (a pydantic ``Field``'s alias, else the parameter's name), and a
    ``Field`` default (``x: int = Field(1)``, ``Annotated[int, Field(default=1)]``)
    is a ``_FieldDefault`` that the call resolves, as pydantic would."""

    __slots__ = ("parameters", "var_keyword", "keyword_hints")

    def __init__(self, function):
        signature = inspect.signature(function)
        hints = _hints(function)
        self.parameters = []
        for p in signature.parameters.values():
            if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                continue
            hint = hints.get(p.name, inspect.Parameter.empty)
            field = _field_info(p.default, hint)
            key, default = p.name, p.default
            if field is not None:
                alias = _validation_name(field)
                key = alias if isinstance(alias, str) else p.name
                default = _FieldDefault(field) if not field.is_required() else inspect.Parameter.empty
            self.parameters.append((p.name, key, p.kind, hint, default))
        keywords = [p for p in signature.parameters.values() if p.kind == inspect.Parameter.VAR_KEYWORD]
        self.var_keyword = bool(keywords)
        # PEP 692: `**kwargs: Unpack[TD]` types each keyword by TD's field.
        self.keyword_hints = _unpacked_hints(hints.get(keywords[0].name)) if keywords else {}


class _FieldDefault:
    """The default of a parameter that a pydantic ``FieldInfo`` gives."""

    __slots__ = ("field", "takes_data")

    def __init__(self, field):
        self.field = field
        # pydantic 2.10 added `validated_data` (for factories that take it).
        self.takes_data = "validated_data" in inspect.signature(field.get_default).parameters

    def value(self):
        if self.takes_data:
            return self.field.get_default(call_default_factory=True, validated_data={})
        return self.field.get_default(call_default_factory=True)


def _field_info(default, hint):
    """The pydantic ``FieldInfo`` describing a parameter: its default, else the last
    one among its ``Annotated`` metadata; ``None`` when it has none."""
    if _is_field_info(default):
        return default
    if typing.get_origin(hint) is typing.Annotated:
        fields = [meta for meta in hint.__metadata__ if _is_field_info(meta)]
        if fields:
            return fields[-1]
    return None


def _validation_name(field):
    """The name callers give a ``Field``'s parameter under, as lcp's schema names it: a
    string ``validation_alias``, the first string of an ``AliasChoices`` (the call
    passes the others under it), else ``alias``; ``None`` for none."""
    alias = field.validation_alias
    if isinstance(alias, str):
        return alias
    choices = getattr(alias, "choices", None)  # pydantic's AliasChoices
    if isinstance(choices, (list, tuple)):
        named = [choice for choice in choices if isinstance(choice, str)]
        if named:
            return named[0]
    return field.alias


def _is_field_info(value):
    kind = type(value)
    return kind.__name__ == "FieldInfo" and kind.__module__.startswith("pydantic")


def _unpacked_hints(hint):
    """The field types of ``TD`` in ``Unpack[TD]``; empty for any other hint."""
    # `typing.Unpack` and, before Python 3.12, `typing_extensions.Unpack`.
    if getattr(typing.get_origin(hint), "_name", None) != "Unpack":
        return {}
    (target,) = typing.get_args(hint)
    if not _is_typeddict(target):
        return {}
    return {name: _required_stripped(field) for name, field in _hints(target).items()}


def _is_typeddict(hint):
    """``typing.is_typeddict``, also true for ``typing_extensions.TypedDict`` classes
    (a different class before Python 3.12)."""
    return isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__required_keys__")


def _required_stripped(hint):
    """``T`` of ``Required[T]`` / ``NotRequired[T]``."""
    if getattr(typing.get_origin(hint), "_name", None) in ("Required", "NotRequired"):
        return typing.get_args(hint)[0]
    return hint


def _hints(function):
    try:
        return typing.get_type_hints(function, include_extras=True)
    except Exception:
        pass
    # One unresolvable annotation must not cost the others their conversion.
    hints = {}
    namespace = getattr(function, "__globals__", {})
    for name, annotation in getattr(function, "__annotations__", {}).items():
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, namespace)  # noqa: S307 - the tool's own annotation
            except Exception:
                continue
        hints[name] = annotation
    return hints


def _plan(function):
    try:
        plan = _plans.get(function)
    except TypeError:  # not weakly referable: no cache
        plan = None
    if plan is None:
        plan = _Plan(function)
        try:
            _plans[function] = plan
        except TypeError:
            pass
    return plan


def _arguments(function, args, injected, objects=None):
    """Positional and keyword arguments for the call, converted to the annotated types.

    Only the arguments given are passed, so Python applies its own defaults.
    Positional-only parameters are passed by position (their skipped predecessors
    get their defaults). A host object (``_HOST_OBJECTS``) is passed when the
    function names it or takes ``**kwargs`` (not ``**kwargs: Unpack[TD]``, which takes
    TD's keys only); another injected name without a default gets ``None``.
    """
    plan = _plan(function)
    args = dict(args)
    positional, pending, keywords = [], [], {}
    for name, key, kind, hint, default in plan.parameters:
        if name in injected and name in _HOST_OBJECTS and objects is not None:
            args.pop(name, None)
            value = objects.get(name)
        elif key in args:
            value = _converted(key, args.pop(key), hint)
        elif name in injected and default is inspect.Parameter.empty:
            value = None
        elif isinstance(default, _FieldDefault):
            value = default.value()
        else:
            if kind == inspect.Parameter.POSITIONAL_ONLY:
                pending.append(default)
            continue
        if kind == inspect.Parameter.POSITIONAL_ONLY:
            positional.extend(pending)
            pending.clear()
            positional.append(value)
        else:
            keywords[name] = value
    if args and not plan.var_keyword:
        raise _ArgumentError(f"unknown arguments: {', '.join(sorted(args))}")
    for name, value in args.items():
        hint = plan.keyword_hints.get(name)
        keywords[name] = value if hint is None else _converted(name, value, hint)
    # `**kwargs: Unpack[TD]` takes TD's keys only: no host object is passed that way.
    if plan.var_keyword and not plan.keyword_hints and objects is not None:
        for name in _HOST_OBJECTS:
            if name in injected and not any(p[0] == name for p in plan.parameters):
                keywords[name] = objects.get(name)
    return positional, keywords


def _converted(name, value, hint):
    try:
        return _convert(value, hint)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise _ArgumentError(f"argument `{name}` cannot be converted to {_type_name(hint)}: {exc}") from None


def _type_name(hint):
    return getattr(hint, "__name__", None) or str(hint)


_NONE = type(None)
_LISTS = (list, collections.abc.Sequence, collections.abc.Iterable, collections.abc.MutableSequence, collections.abc.Collection)
_SETS = (set, frozenset, collections.abc.Set, collections.abc.MutableSet)
_DICTS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)
# Hints ``_convert`` gives every valid JSON value back unchanged.
_AS_IS = (inspect.Parameter.empty, typing.Any, object, str, bool, None, _NONE, list, dict)


def _convert(value, hint):
    """``value`` (parsed JSON) as the type ``hint`` asks for, where that is unambiguous."""
    if hint is inspect.Parameter.empty or hint is typing.Any or hint is object:
        return value
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        if _reshapes(hint):
            return _pydantic(value, hint)
        return _convert(value, typing.get_args(hint)[0])
    if getattr(origin, "_name", None) in ("Required", "NotRequired", "ReadOnly"):
        return _convert(value, typing.get_args(hint)[0])  # a TypedDict field's marker
    if origin is typing.Union or origin is types.UnionType:
        return _convert_union(value, typing.get_args(hint))
    if origin is typing.Literal or hint is None or hint is _NONE:
        return value
    if origin is not None:
        return _convert_generic(value, origin, typing.get_args(hint))
    if not isinstance(hint, type):
        return value  # a TypeVar, a NewType or something else we do not convert
    if value is None:
        return None
    if issubclass(hint, enum.Enum):
        return value if isinstance(value, hint) else hint(value)
    if hint is bool or hint is str:
        return value
    if hint is int:
        return int(value) if isinstance(value, float) and value.is_integer() else value
    if hint is float:
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if hint is datetime.datetime:
        return datetime.datetime.fromisoformat(_iso(value))
    if hint is datetime.date:
        return datetime.date.fromisoformat(value)
    if hint is datetime.time:
        return datetime.time.fromisoformat(_iso(value))
    if hint is datetime.timedelta:
        return _duration(value)
    if hint is uuid.UUID:
        return uuid.UUID(value)
    if hint is decimal.Decimal:
        return _decimal(value)
    if issubclass(hint, PurePath) or hint.__module__ == "ipaddress":
        return hint(value)
    if _is_pydantic_type(hint):
        return _pydantic(value, hint)
    if dataclasses.is_dataclass(hint) and isinstance(value, dict):
        fields = {f.name for f in dataclasses.fields(hint) if f.init}
        return hint(**_fields(value, _hints(hint), fields))
    if _is_typeddict(hint) and isinstance(value, dict):
        return _fields(value, _hints(hint), None)
    if issubclass(hint, tuple) and hasattr(hint, "_fields") and isinstance(value, dict):
        return hint(**_fields(value, _hints(hint), set(hint._fields)))
    if isinstance(value, dict) and callable(getattr(hint, "model_validate", None)):
        return hint.model_validate(value)  # pydantic 2
    if isinstance(value, dict) and callable(getattr(hint, "parse_obj", None)):
        return hint.parse_obj(value)  # pydantic 1
    if hint in (tuple, set, frozenset) and isinstance(value, list):
        return hint(value)
    return value


def _decimal(value):
    """A ``Decimal`` from a JSON number or decimal text; a float goes through its
    shortest text (``0.1`` → ``Decimal('0.1')``), as pydantic does."""
    if isinstance(value, bool):
        raise TypeError("a boolean is not a decimal number")
    number = decimal.Decimal(repr(value) if isinstance(value, float) else value)
    if not number.is_finite():
        raise ValueError(f"not a finite number: {value!r}")
    return number


def _is_pydantic_type(hint):
    """A type pydantic defines that is not a model: ``EmailStr``, ``HttpUrl``,
    ``SecretStr``, ``Json``, ``IPvAnyAddress``… (models convert with ``model_validate``)."""
    return (
        hint.__module__.startswith("pydantic")
        and hasattr(hint, "__get_pydantic_core_schema__")
        and not callable(getattr(hint, "model_validate", None))
    )


def _reshapes(hint):
    """Whether an ``Annotated`` hint carries pydantic metadata that changes the value
    rather than only checking it: ``Json`` (``Json[T]``), ``StringConstraints`` that
    strip or change case, validators (``AfterValidator``…)."""
    for meta in hint.__metadata__:
        kind = meta if isinstance(meta, type) else type(meta)
        module = getattr(kind, "__module__", "")
        if not module.startswith("pydantic"):
            continue
        if kind.__name__ == "Json" or module == "pydantic.functional_validators":
            return True
        if kind.__name__ == "StringConstraints" and any(
            getattr(meta, flag, None) for flag in ("strip_whitespace", "to_lower", "to_upper")
        ):
            return True
    return False


_adapters = {}


def _pydantic(value, hint):
    """``value`` validated by pydantic itself, for types only pydantic knows how to
    make (its adapter is built once per hint)."""
    try:
        adapter = _adapters.get(hint)
    except TypeError:  # an unhashable hint: no cache
        adapter = None
    if adapter is None:
        import pydantic  # the tool imports it already: its hint comes from there

        adapter = pydantic.TypeAdapter(hint)
        try:
            _adapters[hint] = adapter
        except TypeError:
            pass
    try:
        return adapter.validate_python(value)
    except Exception as exc:  # pydantic.ValidationError, without importing it up front
        raise ValueError(str(exc)) from None


def _convert_union(value, arms):
    if value is None and _NONE in arms:
        return None
    arms = [arm for arm in arms if arm is not _NONE]
    # A value that already is what one arm asks for stays as it is.
    if any(_fits(value, arm) for arm in arms):
        return value
    converted = []
    for arm in arms:
        try:
            converted.append(_convert(value, arm))
        except (TypeError, ValueError, KeyError, AttributeError):
            pass
    return converted[0] if len(converted) == 1 else value


def _fits(value, hint):
    """Whether ``value`` needs no conversion to be a ``hint``."""
    if hint is typing.Any or hint is object:
        return True
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        return _fits(value, typing.get_args(hint)[0])
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if origin in _LISTS:
        return isinstance(value, list) and all(_fits(v, a) for a in typing.get_args(hint)[:1] for v in value)
    if origin in _DICTS:
        args = typing.get_args(hint)
        return isinstance(value, dict) and (len(args) < 2 or all(_fits(v, args[1]) for v in value.values()))
    if hint is float:
        return isinstance(value, float)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint in (str, bool, list, dict):
        return isinstance(value, hint)
    return False


def _convert_generic(value, origin, args):
    if value is None:
        return None
    if origin is tuple and isinstance(value, list):
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(v, args[0]) for v in value)
        if args and len(args) == len(value):
            return tuple(_convert(v, a) for v, a in zip(value, args))
        return tuple(value)
    if origin in _SETS and isinstance(value, list):
        items = [_convert(v, args[0]) for v in value] if args else value
        return frozenset(items) if origin is frozenset else set(items)
    if origin in _LISTS and isinstance(value, list):
        return [_convert(v, args[0]) for v in value] if args else value
    if origin in _DICTS and isinstance(value, dict):
        return {k: _convert(v, args[1]) for k, v in value.items()} if len(args) == 2 else value
    return value


def _fields(value, hints, allowed):
    return {
        key: _convert(item, hints.get(key, inspect.Parameter.empty))
        for key, item in value.items()
        if allowed is None or key in allowed
    }


def _iso(text):
    # Python 3.11 reads "Z" itself; older ones do not.
    return text[:-1] + "+00:00" if isinstance(text, str) and text.endswith(("Z", "z")) else text


_DURATION = re.compile(
    r"^(?P<sign>-)?P(?:(?P<weeks>\d+(?:[.,]\d+)?)W)?(?:(?P<days>\d+(?:[.,]\d+)?)D)?"
    r"(?:T(?:(?P<hours>\d+(?:[.,]\d+)?)H)?(?:(?P<minutes>\d+(?:[.,]\d+)?)M)?(?:(?P<seconds>\d+(?:[.,]\d+)?)S)?)?$"
)


def _duration(value):
    """An ISO 8601 duration (``P1DT2H30M``) or a number of seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.timedelta(seconds=value)
    match = _DURATION.match(value) if isinstance(value, str) else None
    if match is None or value.rstrip("T").endswith("P"):
        raise ValueError(f"not an ISO 8601 duration: {value!r}")
    parts = {k: float(v.replace(",", ".")) for k, v in match.groupdict().items() if v and k != "sign"}
    delta = datetime.timedelta(**parts)
    return -delta if match.group("sign") else delta
