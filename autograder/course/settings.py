"""Declared settings: the tables of ``course.toml``, each one frozen dataclass whose fields are
:func:`setting` s (a default, what it means, bounds).

One declaration serves everything: :func:`read_table` reads and checks a table (unknown names,
types, bounds: a clear :class:`ConfigError` naming the table and the setting), the dataclass
gives the defaults, and :func:`describe` lists every setting with its type, default and
meaning (``python -m autograder settings``). Types: ``bool``, ``int``, ``float`` (an integer
is accepted), ``str`` and ``tuple[str, ...]`` (a TOML list of strings). No Jupyter import:
``limits.py`` and ``config.py`` build on it.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any

STRINGS = tuple[str, ...]


class ConfigError(ValueError):
    """``course.toml`` is missing or holds an invalid value."""


def setting(default: Any, help: str, *, minimum: float | None = None, maximum: float | None = None):
    """A field of a settings table: its ``default``, what it means (``help``: one line) and,
    for a number, its bounds (inclusive)."""
    return dataclasses.field(
        default=default, metadata={"help": help, "min": minimum, "max": maximum}
    )


def read_table(cls: type, data: dict, name: str, path: Path | str) -> Any:
    """The ``[name]`` table of the parsed ``course.toml`` ``data`` as ``cls``: absent settings
    take their defaults; an unknown name or a wrong value raises :class:`ConfigError`."""
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [{name}] must be a table")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(table) - set(fields))
    if unknown:
        raise ConfigError(f"{path}: unknown [{name}] settings {unknown}")
    kinds = typing.get_type_hints(cls)
    return cls(
        **{
            key: _checked(value, kinds[key], fields[key].metadata, f"{path}: [{name}] {key}")
            for key, value in table.items()
        }
    )


def _checked(value: Any, kind: Any, meta: dict, where: str) -> Any:
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{where} must be true or false, got {value!r}")
    if kind in (int, float):
        number = isinstance(value, int) and not isinstance(value, bool)
        number = number or (kind is float and isinstance(value, float))
        low, high = meta.get("min"), meta.get("max")
        if not number or (low is not None and value < low) or (high is not None and value > high):
            raise ConfigError(f"{where} must be {_wanted(kind, low, high)}, got {value!r}")
        return kind(value)
    if kind is str:
        if isinstance(value, str):
            return value
        raise ConfigError(f"{where} must be a string, got {value!r}")
    if kind == STRINGS:
        if isinstance(value, list) and all(isinstance(x, str) for x in value):
            return tuple(value)
        raise ConfigError(f"{where} must be a list of strings, got {value!r}")
    raise TypeError(f"{where}: no reader for settings of type {kind}")  # a declaration's bug


def _wanted(kind: type, low: float | None, high: float | None) -> str:
    noun = "an integer" if kind is int else "a number"
    if kind is int and low == 1 and high is None:
        return "a positive integer"
    if low is not None and high is not None:
        return f"{noun} from {low:g} to {high:g}"
    return f"{noun} >= {low:g}" if low is not None else noun


def _type_name(kind: Any) -> str:
    return "list of strings" if kind == STRINGS else {float: "number"}.get(kind, kind.__name__)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)


def describe(tables: dict[str, type], current: dict[str, Any] | None = None) -> str:
    """Every setting of ``tables`` (TOML table name -> its class), table by table in
    ``course.toml``'s syntax: its value (``current``: table name -> the course's values; else
    the default), then its type, bounds and meaning as a comment (and the default when the
    value is not it)."""
    lines = []
    for name, cls in tables.items():
        lines.append(f"[{name}]")
        kinds = typing.get_type_hints(cls)
        values = (current or {}).get(name, cls())
        for f in dataclasses.fields(cls):
            kind, meta = kinds[f.name], f.metadata
            low, high = meta.get("min"), meta.get("max")
            bounds = f" >= {low:g}" if low is not None else ""
            bounds = f" from {low:g} to {high:g}" if high is not None else bounds
            value = getattr(values, f.name)
            default = "" if value == f.default else f" (default {_toml(f.default)})"
            lines.append(f"{f.name} = {_toml(value)}  # {_type_name(kind)}{bounds}: "
                         f"{meta.get('help', '')}{default}")  # fmt: skip
        lines.append("")
    return "\n".join(lines)
