"""The list file of `testbed record --list FILE`: one site to record per line.

    # news sites            a comment: '#' at the start or after a blank
    https://example.org/                 named from the host: example.org
    https://www.example.net/ shop        named shop

The file itself must be readable: a regular file (a FIFO or device is never
waited on) of at most 1 MiB, UTF-8, with at least one URL; otherwise the
whole command is bad input. A bad line (not an http(s) URL, a bad or
repeated name, more than two words) is one `Bad` naming its line; the other
lines are still recorded. A file in which no line is a URL is not a list
file (bad input, and none of its lines is shown).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from testbed.errors import InputError
from testbed.host import safefs
from testbed.record.recorder import NAME_RE, check_url, default_name

MAX_BYTES = 1024 * 1024
_COMMENT = re.compile(r"(^|\s)#.*$")


@dataclass(frozen=True)
class Site:
    line: int
    url: str
    name: str


@dataclass(frozen=True)
class Bad:
    line: int
    text: str
    """The line as written (shortened)."""
    problem: str


def read(path: Path) -> str:
    """The list file's text; InputError (one line naming the file) if it cannot be one."""
    try:
        raw = safefs.read_capped(Path(path), MAX_BYTES)
    except OSError as e:
        raise InputError(f"{path}: cannot read the list file: {e.strerror}") from None
    except ValueError as e:
        raise InputError(f"{path}: {e} (expected a list file of URLs)") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text (expected one URL per line)") from None


def parse(text: str, path: Path | str = "list") -> list[Site | Bad]:
    """Every line holding something, in order: a Site to record or a Bad line.
    InputError if there is no line holding a URL at all."""
    out: list[Site | Bad] = []
    names: dict[str, int] = {}
    for n, raw in enumerate(text.splitlines(), start=1):
        words = _COMMENT.sub("", raw).split()
        if not words:
            continue
        out.append(_entry(n, raw.strip(), words, names))
    if not any(isinstance(e, Site) for e in out):
        # Not a list file at all: its lines are not echoed (a path given by mistake).
        raise InputError(f"{path}: no URLs (expected one http:// or https:// URL per line, "
                         "optionally a name after it; '#' starts a comment)")
    return out


def printable(text: str, limit: int = 80) -> str:
    """Text safe to print on one line: control characters escaped, cut after `limit`."""
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return out if len(out) <= limit else out[:limit - 3] + "..."


def _entry(n: int, text: str, words: list[str], names: dict[str, int]) -> Site | Bad:
    shown = printable(text)
    if len(words) > 2:
        return Bad(n, shown, f"expected URL [NAME], got {len(words)} words")
    url = words[0]
    try:
        check_url(url)
    except InputError:
        return Bad(n, shown, f"expected an http:// or https:// URL with a host and a valid "
                             f"port, got {printable(url)}")
    name = words[1] if len(words) == 2 else default_name(url)
    if not NAME_RE.match(name):
        return Bad(n, shown, f"name {printable(name)}: expected letters, digits, '.', '_' and '-' "
                             "(starting with a letter or digit)")
    if name in names:
        return Bad(n, shown, f"name {name}: already used on line {names[name]} "
                             "(give this URL a name after it)")
    names[name] = n
    return Site(n, url, name)
