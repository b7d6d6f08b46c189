"""TOML files loaded into pydantic models: the one reader and error formatter of every
configuration file (network and protocol profiles, campaigns).

    profile = tomlfile.load(path, NetworkProfile, shown="net.toml", what="profile")

The file is read safely (a regular file only, at most MAX_BYTES, UTF-8), parsed,
and validated; the loader sets `name` (the file name without .toml), `source`
(the path) and `digest` (sha256 of the bytes), so the file may not set them.
Every problem is an InputError of one line naming the file, the key and what
was expected, e.g.

    profiles/networks/x.toml: key downlink_mbit: expected a number > 0, got -3

A model says more where a type alone cannot: a field annotated with
`Expected("...")` is described by that text whatever went wrong inside it, and
a validator that checks several keys raises `KeyProblem(key, message)` to
name the key at fault.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from testbed.errors import InputError
from testbed.host import safefs

MAX_BYTES = 1024 * 1024
"""The largest configuration file read (the bundled ones are below 2 kB)."""

SET_BY_LOADER = ("name", "source", "digest")
"""Fields the loader sets from the file; the file itself may not."""


class LoadedFile(BaseModel):
    """What every model `load` reads shares: strict (`runs = "3"` is refused, not
    converted), no key it does not know, frozen, and the keys the loader sets."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True,
                              use_attribute_docstrings=True)

    name: str = Field(default="", exclude=True)
    """Its name: its file name without .toml (set by the loader)."""
    source: str = Field(default="", exclude=True)
    """The file it was loaded from (set by the loader)."""
    digest: str = Field(default="", exclude=True)
    """sha256 of the file's bytes, so a campaign can record exactly what ran."""
    description: str = ""
    """One line for people: what it stands for."""

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Expected:
    """Annotation of a field: what its value should be, said when it is not
    (e.g. `Annotated[tuple[int, int, int], Expected("a list of 3 whole numbers")]`)."""

    text: str


class KeyProblem(ValueError):
    """Raised by a model's validator: a problem found across fields, pinned to one key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message


def load(path: Path, model: type[M], *, shown: str | None = None, what: str = "TOML") -> M:
    """`path` read, parsed and validated as `model` (with name, source and digest set).
    `shown`: how messages name the file (default: the path); `what`: what the file is,
    for the message when it cannot be read."""
    shown = str(path) if shown is None else shown
    raw = read(path, shown, what)
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"{shown}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{shown}: not valid TOML: {e}") from None
    except RecursionError:  # arrays or inline tables nested thousands deep
        raise InputError(f"{shown}: not valid TOML: nested too deep; expected a "
                         f"{what} file") from None
    for reserved in SET_BY_LOADER:
        if reserved in data:
            raise InputError(f"{shown}: key {reserved}: unknown key (set from the file, not in it)")
    try:
        return model.model_validate({**data, "name": Path(path).stem, "source": str(path),
                                     "digest": hashlib.sha256(raw).hexdigest()})
    except ValidationError as e:
        raise InputError(f"{shown}: {describe(model, e.errors()[0], data)}") from None


def read(path: Path, shown: str, what: str = "TOML") -> bytes:
    """The bytes of a regular file of at most MAX_BYTES (a FIFO or device is refused,
    never waited on)."""
    try:
        return safefs.read_capped(Path(path), MAX_BYTES)
    except OSError as e:
        raise InputError(f"{shown}: cannot read the {what} file: {e.strerror}") from None
    except ValueError as e:
        raise InputError(f"{shown}: {e}") from None


def describe(model: type[BaseModel], err: Mapping[str, Any], data: Mapping[str, Any]) -> str:
    """One pydantic error as 'key K: expected ..., got V'."""
    loc = tuple(str(x) for x in err.get("loc", ()))
    key = ".".join(loc) or "(top level)"
    kind = err.get("type", "")
    ctx = err.get("ctx") or {}
    got = err.get("input")
    got_text = f", got {toml_repr(got)}"
    if kind == "value_error" and isinstance(ctx.get("error"), KeyProblem):
        e = ctx["error"]
        return f"key {e.key}: {e.message}"
    field = model.model_fields.get(loc[0]) if loc else None
    expected = next((m.text for m in (field.metadata if field else ()) if isinstance(m, Expected)),
                    None)
    if expected is not None and kind != "value_error":
        # inside a list: name the key, show the whole value
        value = data[loc[0]] if len(loc) > 1 and loc[0] in data else got
        return f"key {loc[0]}: expected {expected}, got {toml_repr(value)}"
    if kind == "extra_forbidden":
        allowed = ", ".join(k for k in model.model_fields if k not in SET_BY_LOADER)
        return f"key {key}: unknown key (allowed: {allowed})"
    if kind == "missing":
        return f"key {key}: missing (required)"
    bounds = {"greater_than": (">", "gt"), "greater_than_equal": (">=", "ge"),
              "less_than": ("<", "lt"), "less_than_equal": ("<=", "le")}
    if kind in bounds:
        op, name = bounds[kind]
        return f"key {key}: expected a number {op} {ctx.get(name):g}{got_text}"
    if kind in ("float_type", "float_parsing", "finite_number"):
        return f"key {key}: expected a number{got_text}"
    if kind in ("int_type", "int_parsing", "int_parsing_size", "int_from_float"):
        return f"key {key}: expected a whole number{got_text}"
    if kind in ("bool_type", "bool_parsing"):
        return f"key {key}: expected true or false{got_text}"
    if kind == "string_type":
        return f"key {key}: expected a string{got_text}"
    if kind == "literal_error":
        return f"key {key}: expected one of {ctx.get('expected')}{got_text}"
    if kind in ("tuple_type", "list_type"):
        return f"key {key}: expected a list{got_text}"
    if kind == "too_short":
        least = ctx.get("min_length")
        return f"key {key}: expected a list of at least {least} entr{'y' if least == 1 else 'ies'}{got_text}"
    if kind == "too_long":
        return f"key {key}: expected a list of at most {ctx.get('max_length')} entries{got_text}"
    if kind == "value_error":
        return f"key {key}: {ctx.get('error')}"
    return f"key {key}: {err.get('msg')}{got_text}"


MAX_SHOWN = 80
"""Longest string value quoted in a message (longer ones are cut)."""


def toml_repr(v: object) -> str:
    """A value as TOML spells it, on one line (a table is 'a table')."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        text = json.dumps(v if len(v) <= MAX_SHOWN else v[:MAX_SHOWN], ensure_ascii=False)
        return text if len(v) <= MAX_SHOWN else text[:-1] + '..."'
    if isinstance(v, dict):
        return "a table"
    return repr(v)
