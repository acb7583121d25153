"""One codec for every record the harness writes: a dataclass to a JSON-ready dict and back, led by the
dataclasses' own type hints, so no record class writes a loader of its own.

``to_dict`` is ``dataclasses.asdict`` less the fields marked ``not_stored()`` (where a record was read from,
say). ``from_dict(cls, values)`` builds ``cls`` from such a dict: a field typed as a dataclass, a list or a
dict of them, or one of them or None, is built in turn; any other value is taken as it is. A field with a
default may be missing (a document written before the field existed), unless it is ``always_stored``; a
key the class has no field for, or a field missing that must be there, is a ``TypeError`` (the store turns
it into one line naming the file).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")

def not_stored(default: Any = None) -> Any:
    """A field that lives in memory only: never written, never read."""
    return dataclasses.field(default=default, compare=False, metadata={"stored": False})


def always_stored(default_factory: Any) -> Any:
    """A field with a default for those who make the record, that every document must hold all the same:
    one without it is not a record of this kind."""
    return dataclasses.field(default_factory=default_factory, metadata={"always": True})


def _stored_fields(cls: type) -> list[dataclasses.Field]:
    return [field for field in dataclasses.fields(cls) if field.metadata.get("stored", True)]


def to_dict(record: Any) -> dict:
    """The record's stored fields, nested dataclasses as dicts, in field order."""
    values = dataclasses.asdict(record)
    for field in dataclasses.fields(record):
        if not field.metadata.get("stored", True):
            del values[field.name]
    return values


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_dict(cls: type[T], values: dict) -> T:
    """``cls`` from ``values`` as ``to_dict`` wrote them."""
    if not isinstance(values, dict):
        raise TypeError(f"{cls.__name__} needs an object, got {type(values).__name__}")
    fields = {field.name: field for field in _stored_fields(cls)}
    unknown = set(values) - set(fields)
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {sorted(unknown)[0]!r}")
    missing = [name for name, field in fields.items() if field.metadata.get("always") and name not in values]
    if missing:
        raise TypeError(f"{cls.__name__} lacks its field {missing[0]!r}")
    hints = _hints(cls)
    return cls(**{name: _decoded(hints[name], value) for name, value in values.items()})


def _decoded(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        built = [argument for argument in arguments if argument is not type(None) and _builds(argument)]
        return _decoded(built[0], value) if len(built) == 1 else value
    if dataclasses.is_dataclass(hint):
        return from_dict(hint, value)
    if origin is list and arguments:
        return [_decoded(arguments[0], item) for item in value]
    if origin is dict and len(arguments) == 2:
        return {key: _decoded(arguments[1], item) for key, item in value.items()}
    return value


def _builds(hint: Any) -> bool:
    """Whether values of ``hint`` are built rather than taken as they are."""
    if dataclasses.is_dataclass(hint):
        return True
    return any(_builds(argument) for argument in typing.get_args(hint))
