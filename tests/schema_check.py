"""A small JSON Schema validator: the subset of draft 2020-12 that docs/*.schema.json use.

Keywords: type, const, enum, required, properties, additionalProperties, minProperties,
items, minItems, pattern, minLength, minimum, exclusiveMinimum, oneOf, $ref (local
``#/$defs/...``); annotations (description, title, $schema, $id) are ignored. An unknown
keyword is an error, so the schema cannot silently use something this validator skips. The
tests also run ``jsonschema`` on the same records when it happens to be installed.
"""

from __future__ import annotations

import math
import re
from typing import Any

_ANNOTATIONS = {"description", "title", "$schema", "$id", "$defs"}
_KEYWORDS = {"type", "const", "enum", "required", "properties", "additionalProperties",
             "minProperties", "items", "minItems", "pattern", "minLength", "minimum",
             "exclusiveMinimum", "oneOf", "$ref"} | _ANNOTATIONS


def _is_type(x: Any, t: str) -> bool:
    if t == "object":
        return isinstance(x, dict)
    if t == "array":
        return isinstance(x, list)
    if t == "string":
        return isinstance(x, str)
    if t == "boolean":
        return isinstance(x, bool)
    if t == "null":
        return x is None
    if t == "integer":
        return (isinstance(x, int) and not isinstance(x, bool)) or (
            isinstance(x, float) and math.isfinite(x) and x.is_integer())
    if t == "number":
        return isinstance(x, int | float) and not isinstance(x, bool)
    raise ValueError(f"unknown type {t!r}")


def _equal(a: Any, b: Any) -> bool:
    # JSON equality: 1 == 1.0, but True is not 1
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def errors(instance: Any, schema: dict[str, Any], root: dict[str, Any] | None = None,
           path: str = "$") -> list[str]:
    """Every violation of ``schema`` by ``instance`` (empty list: valid)."""
    root = schema if root is None else root
    unknown = set(schema) - _KEYWORDS
    if unknown:
        raise ValueError(f"{path}: schema keywords not supported here: {sorted(unknown)}")
    out: list[str] = []
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            raise ValueError(f"only local references, got {ref!r}")
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        out += errors(instance, target, root, path)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is_type(instance, t) for t in types):
            return out + [f"{path}: {instance!r} is not of type {types}"]
    if "const" in schema and not _equal(instance, schema["const"]):
        out.append(f"{path}: {instance!r} is not {schema['const']!r}")
    if "enum" in schema and not any(_equal(instance, v) for v in schema["enum"]):
        out.append(f"{path}: {instance!r} is not one of {schema['enum']}")
    if "oneOf" in schema:
        ok = [s for s in schema["oneOf"] if not errors(instance, s, root, path)]
        if len(ok) != 1:
            out.append(f"{path}: matches {len(ok)} of the oneOf alternatives, not exactly 1")
    if isinstance(instance, dict):
        for k in schema.get("required", []):
            if k not in instance:
                out.append(f"{path}: required key {k!r} missing")
        if len(instance) < schema.get("minProperties", 0):
            out.append(f"{path}: fewer than {schema['minProperties']} keys")
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for k, v in instance.items():
            if k in props:
                out += errors(v, props[k], root, f"{path}.{k}")
            elif extra is False:
                out.append(f"{path}: key {k!r} is not allowed")
            elif isinstance(extra, dict):
                out += errors(v, extra, root, f"{path}.{k}")
    if isinstance(instance, list):
        if len(instance) < schema.get("minItems", 0):
            out.append(f"{path}: fewer than {schema['minItems']} items")
        if "items" in schema:
            for k, v in enumerate(instance):
                out += errors(v, schema["items"], root, f"{path}[{k}]")
    if isinstance(instance, str):
        if "pattern" in schema and not re.search(schema["pattern"], instance):
            out.append(f"{path}: {instance!r} does not match {schema['pattern']!r}")
        if len(instance) < schema.get("minLength", 0):
            out.append(f"{path}: shorter than {schema['minLength']}")
    if _is_type(instance, "number"):
        if "minimum" in schema and instance < schema["minimum"]:
            out.append(f"{path}: {instance} < {schema['minimum']}")
        if "exclusiveMinimum" in schema and instance <= schema["exclusiveMinimum"]:
            out.append(f"{path}: {instance} <= {schema['exclusiveMinimum']}")
    return out
