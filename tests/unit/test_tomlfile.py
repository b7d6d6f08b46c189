"""The one TOML loader: safe reading, and pydantic errors as one line naming the key."""

from __future__ import annotations

import os
from typing import Annotated

import pytest
from pydantic import BaseModel, ConfigDict, Field, model_validator

from testbed.errors import InputError
from testbed.formats import tomlfile
from testbed.formats.tomlfile import Expected, KeyProblem


class Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = ""
    source: str = ""
    digest: str = ""
    count: int = Field(default=1, ge=1)
    names: tuple[str, ...] = Field(default=("a",), min_length=1)
    triple: Annotated[tuple[int, int, int] | None, Expected("three whole numbers")] = None
    low: int = 0
    high: int = 0

    @model_validator(mode="after")
    def _ordered(self) -> Model:
        if self.low > self.high:
            raise KeyProblem("high", f"expected at least low ({self.low}), got {self.high}")
        return self


def load(tmp_path, text: str | bytes) -> Model:
    f = tmp_path / "m.toml"
    f.write_bytes(text if isinstance(text, bytes) else text.encode())
    return tomlfile.load(f, Model, shown="m.toml")


def test_loads_and_sets_name_source_and_digest(tmp_path):
    m = load(tmp_path, "count = 3\n")
    assert (m.count, m.name, m.source) == (3, "m", str(tmp_path / "m.toml"))
    assert len(m.digest) == 64


@pytest.mark.parametrize("text, message", [
    ("count = 0", "m.toml: key count: expected a number >= 1, got 0"),
    ("count = 'x'", 'm.toml: key count: expected a whole number, got "x"'),
    ("cuont = 2", "m.toml: key cuont: unknown key (allowed: count, names, triple, low, high)"),
    ("names = []", "m.toml: key names: expected a list of at least 1 entry, got []"),
    ("names = 'a'", 'm.toml: key names: expected a list, got "a"'),
    ("names = ['a', 2]", "m.toml: key names.1: expected a string, got 2"),
    ("triple = [1, 2]", "m.toml: key triple: expected three whole numbers, got [1, 2]"),
    ("triple = [1, 'x', 3]", "m.toml: key triple: expected three whole numbers, got [1, 'x', 3]"),
    ("low = 3\nhigh = 2", "m.toml: key high: expected at least low (3), got 2"),
    ("digest = 'abc'", "m.toml: key digest: unknown key (set from the file, not in it)"),
    ("[count]\nx = 1", "m.toml: key count: expected a whole number, got a table"),
    ("count = = 1", "m.toml: not valid TOML: "),
])
def test_errors_are_one_line_naming_the_key(tmp_path, text, message):
    with pytest.raises(InputError) as e:
        load(tmp_path, text + "\n")
    assert str(e.value).startswith(message), str(e.value)
    assert "\n" not in str(e.value)


def test_a_string_value_is_quoted_on_one_line_and_cut(tmp_path):
    with pytest.raises(InputError) as e:
        load(tmp_path, 'count = "a\\nb"\n')
    assert str(e.value) == 'm.toml: key count: expected a whole number, got "a\\nb"'
    with pytest.raises(InputError) as e:
        load(tmp_path, f'count = "{"y" * 500}"\n')
    assert str(e.value).endswith(f'got "{"y" * tomlfile.MAX_SHOWN}..."')


def test_not_utf8(tmp_path):
    with pytest.raises(InputError, match=r"^m.toml: not UTF-8 text$"):
        load(tmp_path, b"count = 1\n# \xff\n")


def test_a_file_over_the_cap_is_refused_unread(tmp_path):
    with pytest.raises(InputError, match=rf"^m.toml: {tomlfile.MAX_BYTES + 1} bytes, expected at most {tomlfile.MAX_BYTES}$"):
        load(tmp_path, "#" * tomlfile.MAX_BYTES + "\n")


def test_a_fifo_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "f.toml"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="f.toml: not a regular file"):
        tomlfile.load(fifo, Model, what="campaign")


def test_a_folder_or_missing_file_is_refused(tmp_path):
    with pytest.raises(InputError, match="cannot read the profile file"):
        tomlfile.load(tmp_path / "nothing.toml", Model, what="profile")
    with pytest.raises(InputError, match=": not a regular file"):
        tomlfile.load(tmp_path, Model, what="profile")


@pytest.mark.parametrize("text", ["count = " + "[" * 100_000 + "]" * 100_000,
                                  "count = " + "{a = " * 20_000 + "1" + "}" * 20_000])
def test_nesting_thousands_deep_is_one_line_not_a_recursion_error(tmp_path, text):
    with pytest.raises(InputError, match=r"^m.toml: not valid TOML: nested too deep"):
        load(tmp_path, text)
