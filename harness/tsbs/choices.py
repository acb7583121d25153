"""The data set's own choices: how fields are typed, and how tag columns are held in pandas."""

from __future__ import annotations

from enum import StrEnum

from harness.errors import ParameterError


def choice(enum: type[StrEnum], value: object, parameter: str) -> StrEnum:
    """``value`` as a member of ``enum``; a value that is none names the parameter and the choices."""
    try:
        return enum(str(value))
    except ValueError:
        raise ParameterError(parameter, f"must be one of {', '.join(enum)}, got {value!r}") from None


class FieldType(StrEnum):
    """How the TSBS fields are typed: ``double`` the walk states, ``long`` TSBS's printed integers."""

    double = "double"
    long = "long"

    @property
    def sql_type(self) -> str:
        """The column type QuestDB holds such a field in."""
        return "DOUBLE" if self is FieldType.double else "LONG"


class SymbolDtype(StrEnum):
    """The pandas dtype of tag columns (``category`` is the fast one; the others exist to compare)."""

    category = "category"
    str = "str"
    string_pyarrow = "string[pyarrow]"
    object = "object"
