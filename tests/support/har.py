"""HAR 1.2's JSON schema (the har-schema package's files in tests/har_schema) as a
validator."""

from __future__ import annotations

import json

import jsonschema
from referencing import Registry, Resource

from support.paths import TESTS

HAR_SCHEMA = TESTS / "har_schema"


def har_validator() -> jsonschema.Validator:
    """A validator for HAR 1.2 built from the har-schema package's files."""
    resources = []
    for path in HAR_SCHEMA.glob("*.json"):
        doc = json.loads(path.read_text())
        resources.append((doc["$id"].rstrip("#"), Resource.from_contents(doc)))
    registry = Registry().with_resources(resources)
    root = json.loads((HAR_SCHEMA / "har.json").read_text())
    cls = jsonschema.Draft6Validator
    return cls(root, registry=registry, format_checker=cls.FORMAT_CHECKER)
