"""Options declared once: a dataclass field carries its default, help, flag and range, and drives both the
typer command and the library's own check.

Flags that several commands share are declared once, in the groups of ``harness.options.groups``, which a
command's options class inherits. A run's options are a dataclass (``BenchOptions``, ``ReplayOptions``, ...) whose fields are made with
``option(...)``. ``add_command`` turns such a class into a typer command (so ``--help``, choices and
ranges come from the same declaration), and ``check_options`` applies the same ranges to an instance
built from Python, where typer never ran; ``lazy_group`` defers ``add_command`` until a command is used,
so that the command line imports only the module of the command it runs. Choices are ``StrEnum``s (the
domain's, e.g. ``harness.tsbs.choices.FieldType``): they compare equal to their plain string values, so
library callers may pass ``"double"`` as well as ``FieldType.double``. The library names a bad value by its
parameter (``ParameterError``, ``harness.errors.named``); the command line says it by its flag (``flagged``).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import math
import threading
import typing
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any

import typer
import typer.main
from typer.core import TyperGroup

from harness.errors import HarnessError, ParameterError, UsageError, flag_of, spoken


def option(default: Any, help: str, *, flags: tuple[str, ...] = (), min: float | None = None,
           max: float | None = None, min_open: bool = False, argument: bool = False,
           cli: bool = True) -> Any:
    """A dataclass field that is also a command-line option.

    ``min``/``max`` bound numbers (``min_open``: strictly greater than ``min``); ``flags`` overrides the
    flag names typer derives from the field name; ``argument`` makes it positional; ``cli=False`` keeps
    it out of the command line (settings only a library caller changes)."""
    metadata = {"help": help, "flags": flags, "min": min, "max": max, "min_open": min_open,
                "argument": argument, "cli": cli}
    return dataclasses.field(default=default, metadata=metadata)


def _hints(options_class: type) -> dict[str, Any]:
    return typing.get_type_hints(options_class)


def _enum_of(hint: Any) -> type[Enum] | None:
    for candidate in (hint, *typing.get_args(hint)):
        if isinstance(candidate, type) and issubclass(candidate, Enum):
            return candidate
    return None


def flag_name(field: dataclasses.Field) -> str:
    """How the command line spells a field, for messages: ``--worker-chunk-row-count``."""
    flags = field.metadata.get("flags") or ()
    return flags[0] if flags else "--" + field.name.replace("_", "-")


def parameter_flag(options_class: type, parameter: str) -> str:
    """The flag of ``options_class`` that sets the library's ``parameter`` (``--timestamp-start``)."""
    for field in dataclasses.fields(options_class):
        if field.name == parameter and field.metadata.get("cli", True):
            return flag_name(field)
    return flag_of(parameter)


def flagged(text: str, options_class: type) -> str:
    """``text`` with each parameter it names (``harness.errors.named``) said by its flag of ``options_class``."""
    return spoken(text, functools.partial(parameter_flag, options_class))


def said_by_flags(error: HarnessError, options_class: type) -> str:
    """An error's line as the command line says it: a bad parameter's (``ParameterError``) led by its flag, and
    every parameter it names said by its flag of ``options_class``."""
    if isinstance(error, ParameterError):
        return f"{parameter_flag(options_class, error.parameter)}: {flagged(error.problem, options_class)}"
    return flagged(str(error), options_class)


def flagged_values(value: Any, options_class: type) -> Any:
    """``value`` as a record keeps it (text, and the lists and dicts that hold it) with each parameter its text
    names said by its flag of ``options_class``."""
    if isinstance(value, str):
        return flagged(value, options_class)
    if isinstance(value, dict):
        return {key: flagged_values(item, options_class) for key, item in value.items()}
    if isinstance(value, list):
        return [flagged_values(item, options_class) for item in value]
    return value


@dataclass(frozen=True)
class Spelling:
    """How a command says the parameters the library names in its messages, its record and what it prints: by the
    flags of its options class (``str`` for a library caller: the text as the library wrote it)."""

    options_class: type | None = None

    def text(self, text: str) -> str:
        return text if self.options_class is None else flagged(text, self.options_class)

    def error(self, error: BaseException) -> str:
        """An error's one line (the harness's own errors spelled; any other by its type and text)."""
        if not isinstance(error, HarnessError):
            return f"{type(error).__name__}: {error}"
        return str(error) if self.options_class is None else said_by_flags(error, self.options_class)

    def values(self, value: Any) -> Any:
        return value if self.options_class is None else flagged_values(value, self.options_class)


def coerce_choices(instance: Any) -> None:
    """Turn plain strings given from Python into the field's enum member (``"long"`` -> FieldType.long);
    an unknown value is a UsageError naming the flag and the choices."""
    hints = _hints(type(instance))
    for field in dataclasses.fields(instance):
        enum = _enum_of(hints[field.name])
        value = getattr(instance, field.name)
        if enum is None or value is None or isinstance(value, enum):
            continue
        try:
            setattr(instance, field.name, enum(str(value)))
        except ValueError:
            choices = ", ".join(member.value for member in enum)
            raise UsageError(f"{flag_name(field)} must be one of {choices}, got {value!r}") from None


def check_options(instance: Any) -> None:
    """The declared ranges, for an instance built without typer; floats must also be finite."""
    for field in dataclasses.fields(instance):
        value = getattr(instance, field.name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        name, low, high = flag_name(field), field.metadata.get("min"), field.metadata.get("max")
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"{name} must be a finite number, got {value}")
        if isinstance(value, float) and value > threading.TIMEOUT_MAX:
            raise UsageError(f"{name} must be <= {threading.TIMEOUT_MAX:g} (seconds: the longest wait this system "
                             f"can make), got {value:g}")
        if low is not None and (value <= low if field.metadata.get("min_open") else value < low):
            relation = ">" if field.metadata.get("min_open") else ">="
            raise UsageError(f"{name} must be {relation} {low:g}, got {value}")
        if high is not None and value > high:
            raise UsageError(f"{name} must be <= {high:g}, got {value}")


class CommandOptions:
    """What every command's options class is, beside the groups it composes: choices given as plain strings
    become their enum members as the options are made; ``resolved`` names the options a run really takes;
    ``check_values`` refuses, in one line naming the flag, what the run cannot take (a command extends it
    with its own rules, calling this one first). ``command`` applies them, in that order, at the door."""

    def __post_init__(self) -> None:
        coerce_choices(self)

    def resolved(self) -> CommandOptions:
        """The options the run takes: these, unless they point at others (``bench --resume`` takes those of
        the run it resumes)."""
        return self

    def check_values(self) -> None:
        check_options(self)

    def rehearse(self) -> None:
        """What a ``--dry-run`` checks beyond ``check_values``, still asking no server (a command whose checks
        need more than its values: ``queries run`` reads its query file)."""

    def spelling(self) -> Spelling:
        """How this command says the parameters the library names: by its flags."""
        return Spelling(type(self))


def command(run: Callable[..., Any]) -> Callable[..., Any]:
    """A command's door, the one place its options are admitted: resolved, checked, and a ``--dry-run``
    ended there (returning None), before ``run`` sees them. Library callers and the command line go through
    the same door; ``add_command`` puts a run function that lacks one behind it."""
    if getattr(run, "is_command", False):
        return run

    @functools.wraps(run)
    def door(options: CommandOptions, *args: Any, **kwargs: Any) -> Any:
        dry_run = getattr(options, "dry_run", False)
        options = options.resolved()
        options.check_values()
        if dry_run:
            options.rehearse()
            return None
        return run(options, *args, **kwargs)

    door.is_command = True
    return door


def add_command(app: typer.Typer, options_class: type, run: Callable[[Any], Any], *, name: str,
                help: str) -> None:
    """Register ``name`` on ``app``: its parameters are ``options_class``'s CLI fields, and it calls
    ``run(options_class(**values))`` behind its door (``command``)."""
    run = command(run)
    hints = _hints(options_class)
    parameters = []
    for field in dataclasses.fields(options_class):
        metadata = field.metadata
        if not metadata.get("cli", True):
            continue
        declare = typer.Argument if metadata["argument"] else typer.Option
        # typer has no open bounds: ``check_options`` (which every run calls) enforces those.
        low = None if metadata["min_open"] else metadata["min"]
        info = declare(*metadata["flags"], help=metadata["help"], min=low, max=metadata["max"],
                       show_default=field.default is not None)
        default = inspect.Parameter.empty if metadata["argument"] and field.default is None else field.default
        parameters.append(inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                            annotation=Annotated[hints[field.name], info]))

    def typer_command(**values: Any) -> None:
        try:
            run(options_class(**values))
        except ParameterError as exc:
            raise UsageError(said_by_flags(exc, options_class)) from None
        except HarnessError as exc:  # the parameters it names, said by their flags
            exc.args = (said_by_flags(exc, options_class), *exc.args[1:])
            raise

    typer_command.__signature__ = inspect.Signature(parameters)
    typer_command.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}
    typer_command.__doc__ = help
    typer_command.__name__ = name.replace("-", "_")
    app.command(name=name)(typer_command)


@dataclasses.dataclass(frozen=True)
class LazyCommand:
    """A command registered by name: ``options`` and ``run`` are ``"module:attribute"`` (``run`` may also
    be a function), imported only when the command is looked up to run it or to print its help."""

    name: str
    options: str
    run: str | Callable[[Any], Any]
    help: str

    def command(self, rich_markup_mode: Any) -> typer.core.TyperCommand:
        """The click command ``add_command`` makes of it, as its group would have built it."""
        single = typer.Typer(add_completion=False, rich_markup_mode=rich_markup_mode)
        run = _attribute(self.run) if isinstance(self.run, str) else self.run
        add_command(single, _attribute(self.options), run, name=self.name, help=self.help)
        return typer.main.get_command(single)


def _attribute(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


class _Commands(MutableMapping):
    """A group's name -> click command table in which a ``LazyCommand`` is built the first time it is read;
    its names (listing, "Did you mean") never build anything."""

    def __init__(self, entries: dict[str, Any], rich_markup_mode: Any) -> None:
        self._entries = entries
        self._rich_markup_mode = rich_markup_mode

    def __getitem__(self, name: str) -> Any:
        entry = self._entries[name]
        if isinstance(entry, LazyCommand):
            entry = self._entries[name] = entry.command(self._rich_markup_mode)
        return entry

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __setitem__(self, name: str, command: Any) -> None:
        self._entries[name] = command

    def __delitem__(self, name: str) -> None:
        del self._entries[name]


def lazy_group(*lazy: LazyCommand) -> type[TyperGroup]:
    """A group class for ``typer.Typer(cls=...)`` that holds the ``lazy`` commands, listed before the group's
    other commands in the order given.

    typer builds every command of an app whenever it runs one, and a command needs its options class, whose
    module may import pandas, numba, matplotlib or asyncpg: eagerly registered, `generate` would start by
    importing what `bench` and `queries run` need. Here a command's module is imported when click looks the
    command up: to run it, to print its --help, or the group's (which lists every command)."""

    class LazyGroup(TyperGroup):
        def __init__(self, *, commands: dict[str, Any] | None = None, **settings: Any) -> None:
            super().__init__(**settings)
            self.commands = _Commands({**{command.name: command for command in lazy}, **(commands or {})},
                                      self.rich_markup_mode)

    return LazyGroup
