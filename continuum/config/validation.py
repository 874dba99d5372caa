"""One section of the experiment file checked against its pydantic model,
every error turned into a ConfigIssue with its key path and what would be
valid; on errors, the section with the bad keys at their defaults, so the
checks across sections still run in the same pass."""

from __future__ import annotations

import copy
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from continuum.errors import ConfigIssue


def valid_keys(model: type[BaseModel], loc: tuple) -> str:
    """The keys allowed next to an unknown key at loc (inside model)."""
    parts = list(loc[:-1])
    while parts:
        name = str(parts.pop(0))
        field = next((f for k, f in model.model_fields.items() if (f.alias or k) == name), None)
        ann = getattr(field, "annotation", None)
        args = typing.get_args(ann)
        if typing.get_origin(ann) is dict and parts:  # a table of tables: [cell.ue.NAME]
            parts.pop(0)
            ann = args[1]
        elif type(None) in args:  # Model | None
            ann = next(a for a in args if a is not type(None))
        if not (isinstance(ann, type) and issubclass(ann, BaseModel)):
            return ""
        model = ann
    return ", ".join(f.alias or k for k, f in model.model_fields.items())


def issues_from(e: ValidationError, file: str, prefix: str, model: type[BaseModel] | None = None) -> list[ConfigIssue]:
    out = []
    for err in e.errors():
        loc = ""
        for p in (prefix, *err["loc"]):
            if isinstance(p, int):
                loc += f"[{p}]"  # an array's item, as a reader of the file counts them: classes[2].raw
            elif p != "":
                loc += ("." if loc else "") + str(p)
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            valid = valid_keys(model, err["loc"]) if model else ""
            msg = "unknown key" + (f"; valid: {valid}" if valid else "")
        elif err["type"] == "literal_error":
            msg = f"{msg}, got {err.get('input')!r}"
        elif err["type"] == "missing":
            msg = "required key is missing"
        out.append(ConfigIssue(file, loc, msg))
    return out


def validate_section(model: type[BaseModel], data: Any, file: str, key: str, issues: list[ConfigIssue]) -> Any:
    """The section validated; on errors, report them all and return the section
    with the offending keys left at their defaults, so the checks that need
    more than one key (trace names, counts, payload bounds) still run in the
    same pass. None when even that does not validate (a required key is bad)."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        issues.extend(issues_from(e, file, key, model))
        return without_bad_keys(model, data, e)


def without_bad_keys(model: type[BaseModel], data: Any, e: ValidationError) -> Any:
    if not isinstance(data, dict):
        return None
    data = copy.deepcopy(data)
    for err in e.errors():
        parent, loc = data, list(err["loc"])
        while len(loc) > 1 and isinstance(parent.get(loc[0]), dict) and loc[1] in parent[loc[0]]:
            parent = parent[loc.pop(0)]
        if isinstance(parent, dict):
            parent.pop(loc[0], None)
    try:
        return model.model_validate(data)
    except ValidationError:
        return None


@dataclass
class Issues:
    """One file's problems, gathered while its sections are resolved: `bad`
    adds one; `failed` says whether a key already has a schema error, so that
    a check that reads it would only judge the default standing in for it."""

    file: str
    base: Path  # the file's folder: relative trace paths and commands start there
    materialize: bool  # False (validate, --dry-run): archive traces are only checked to be makeable
    issues: list[ConfigIssue]
    schema_keys: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.schema_done()

    def schema_done(self) -> None:
        """Every section has been checked against its model: the problems so far are schema errors."""
        self.schema_keys = [i.key for i in self.issues]

    def bad(self, key: str, msg: str) -> None:
        self.issues.append(ConfigIssue(self.file, key, msg))

    def failed(self, *keys: str) -> bool:
        return any(s == k or s.startswith((k + ".", k + "[")) for s in self.schema_keys for k in keys)
