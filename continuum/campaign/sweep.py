"""[sweep]: which keys of the experiment file a campaign varies, and the
points that makes. Each key is a dotted path of the file
("cell.uplink" = ["pf", "smec"]) with its values; the keys vary as a
product unless a `zip` group ties some together (their lists walk side by
side); `seeds` repeats every point with [experiment] seed set to each; and
[sweep.arms.NAME] tables name arms, each setting several keys at once (the
product runs within every arm). A point is the file with its values set
and [sweep] removed: it is checked as a whole file, as `continuum run`
would check it, so every problem is found before anything runs, named by
its point."""

from __future__ import annotations

import copy
import itertools
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from continuum.errors import ConfigError, ConfigIssue

RESERVED = ("seeds", "zip", "arms")
MAX_POINTS = 1000


class _Unset:
    """An arm's `unset = [KEYS]`: these keys removed from its points' file (a key the base file sets that
    means nothing in the arm, such as the CU's buffer where the transport is TCP)."""

    def __repr__(self) -> str:
        return "(unset)"


UNSET = _Unset()


@dataclass(frozen=True)
class Point:
    """One point of a campaign: its number (from 1), its arm (None: the file has none), the values it
    sets by dotted key, its seed (None: the file's), and its text: the experiment file it runs."""

    index: int
    arm: str | None
    values: dict[str, Any]
    seed: int | None
    text: str = field(repr=False)

    def label(self) -> str:
        """For people: "arm smec, cell.uplink=pf, seed 2"."""
        parts = ([f"arm {self.arm}"] if self.arm else []) + [f"{k}={_show(v)}" for k, v in self.values.items()]
        return ", ".join(parts + ([f"seed {self.seed}"] if self.seed is not None else [])) or "the file as written"

    def slug(self) -> str:
        """Its folder's name in the campaign: the number, then what it sets, safe in a path."""
        bits = ([self.arm] if self.arm else []) + [f"{k}={_show(v)}" for k, v in self.values.items()]
        bits += [f"seed={self.seed}"] if self.seed is not None else []
        text = re.sub(r"[^A-Za-z0-9._=+-]+", "_", "-".join(bits))[:80].strip("_-")
        return f"{self.index:03d}" + (f"-{text}" if text else "")


@dataclass(frozen=True)
class Sweep:
    arms: dict[str, dict[str, Any]]  # name -> the values it sets ({}: no arms, one unnamed)
    axes: list[tuple[tuple[str, ...], list[tuple[Any, ...]]]]  # keys moving together, and their values' rows
    seeds: list[int]


def has_sweep(path: Path) -> bool:
    """Whether the file is a campaign (a [sweep] table); False for a file that cannot be read or parsed
    (its loader says why)."""
    try:
        return isinstance(tomllib.loads(path.read_text()).get("sweep"), dict)
    except (OSError, tomllib.TOMLDecodeError):
        return False


def points(path: Path) -> list[Point]:
    """The campaign's points, in order, each point's file text made; ConfigError naming every problem of
    [sweep] itself (the points are checked as files by `check`)."""
    file = str(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        raise ConfigError([ConfigIssue(file, "(file)", f"cannot read: {e.strerror}")]) from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError([ConfigIssue(file, "(syntax)", f"not valid TOML: {e}")]) from None
    sweep = parse(data.get("sweep"), file)
    base = {k: v for k, v in data.items() if k != "sweep"}
    out: list[Point] = []
    arms: list[tuple[str | None, dict[str, Any]]] = [*sweep.arms.items()] or [(None, {})]
    rows = list(itertools.product(*(values for _, values in sweep.axes))) if sweep.axes else [()]
    seeds: list[int | None] = list(sweep.seeds) or [None]
    total = len(arms) * len(rows) * len(seeds)
    if total > MAX_POINTS:
        raise ConfigError([ConfigIssue(file, "sweep", f"{total} points; at most {MAX_POINTS} in one campaign: split it")])
    problems: list[ConfigIssue] = []
    for arm, arm_values in arms:
        for row in rows:
            values: dict[str, Any] = {}
            for (keys, _), vals in zip(sweep.axes, row):
                values.update(zip(keys, vals))
            for seed in seeds:
                doc = copy.deepcopy(base)
                point_no = len(out) + 1
                for key, value in {**arm_values, **values, **({"experiment.seed": seed} if seed is not None else {})}.items():
                    why = _set(doc, key, value)
                    if why:
                        problems.append(ConfigIssue(file, f"sweep: {key}", why))
                head = f"# point {point_no} of the campaign {path.name}: {Point(point_no, arm, values, seed, '').label()}\n"
                out.append(Point(point_no, arm, values, seed, head + tomli_w.dumps(doc)))
    if problems:
        raise ConfigError(list({(i.key, i.message): i for i in problems}.values()))
    return out


def parse(table: Any, file: str) -> Sweep:
    """[sweep] as written -> its arms, axes and seeds; every problem at once."""
    bad: list[ConfigIssue] = []

    def say(key: str, message: str) -> None:
        bad.append(ConfigIssue(file, key, message))

    if not isinstance(table, dict):
        raise ConfigError([ConfigIssue(file, "sweep", "expected a table ([sweep]: \"KEY.PATH\" = [values], seeds, zip, "
                                                      "[sweep.arms.NAME])")])
    lists = {k: v for k, v in _flatten({k: v for k, v in table.items() if k not in RESERVED}).items()}
    for key, values in lists.items():
        if not isinstance(values, list):
            say(f"sweep.{key}", f"expected a list of the values to run ({key} = [a, b]); one value belongs in the file itself")
        elif not values:
            say(f"sweep.{key}", "an empty list: give at least one value")
        elif any(isinstance(v, dict) for v in values):
            say(f"sweep.{key}", "a table as a value: sweep its keys one by one (\"KEY.PATH.SUBKEY\" = [...])")
    seeds = table.get("seeds", [])
    if not isinstance(seeds, list) or not all(type(s) is int and s >= 0 for s in seeds):
        say("sweep.seeds", "expected a list of seeds, non-negative integers (seeds = [1, 2, 3])")
        seeds = []
    elif len(set(seeds)) != len(seeds):
        say("sweep.seeds", f"{seeds}: a seed given twice would run the same point twice")
    if "experiment.seed" in lists:
        say("sweep.experiment.seed", "sweep seeds with `seeds = [...]`")
    for key in ("experiment.name", "experiment.output"):
        if key in lists or any(key in _flatten(t) for t in (table.get("arms") or {}).values() if isinstance(t, dict)):
            say(f"sweep.{key}", "a campaign's points share its name and output folder (the campaign folder is "
                                "OUTPUT/campaign-NAME); sweep other keys")
    zipped = table.get("zip", [])
    groups: list[tuple[str, ...]] = []
    if not isinstance(zipped, list) or not all(isinstance(g, list) and len(g) >= 2 and all(isinstance(k, str) for k in g)
                                                for g in zipped):
        say("sweep.zip", "expected a list of groups, each two or more swept keys that move together "
                         "(zip = [[\"mobile.uplink\", \"mobile.downlink\"]])")
    else:
        seen: set[str] = set()
        for i, g in enumerate(zipped):
            for k in g:
                if k not in lists:
                    say(f"sweep.zip[{i}]", f"{k!r} is not a swept key; swept: {', '.join(lists) or 'none'}")
                elif k in seen:
                    say(f"sweep.zip[{i}]", f"{k!r} is in two groups")
                seen.add(k)
            sizes = {len(lists[k]) for k in g if isinstance(lists.get(k), list)}
            if len(sizes) > 1:
                say(f"sweep.zip[{i}]", "the keys of a group walk side by side: give them lists of one length "
                                       f"({', '.join(f'{k}: {len(lists[k])}' for k in g if isinstance(lists.get(k), list))})")
            groups.append(tuple(g))
    arms: dict[str, dict[str, Any]] = {}
    raw_arms = table.get("arms", {})
    if not isinstance(raw_arms, dict):
        say("sweep.arms", "expected tables ([sweep.arms.NAME] with the keys the arm sets)")
    else:
        for name, t in raw_arms.items():
            if not isinstance(t, dict):  # an empty table: the arm runs the file as it is (a baseline)
                say(f"sweep.arms.{name}", "expected a table of the keys this arm sets (\"cell.uplink\" = \"smec\"), "
                                          "or an empty one for the file as it is")
                continue
            t = dict(t)
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
                say(f"sweep.arms.{name}", "an arm's name: letters, digits, '_', '.', '-' (it names folders and table rows)")
            unset = t.pop("unset", [])
            if not isinstance(unset, list) or not all(isinstance(k, str) and k for k in unset):
                say(f"sweep.arms.{name}.unset", "expected a list of dotted keys the arm removes from the file "
                                                "(unset = [\"transport.buffer_kb\"])")
                unset = []
            flat = _flatten(t)
            for k in unset:
                if k in flat:
                    say(f"sweep.arms.{name}.unset", f"{k} is both set and unset by the arm: choose one")
                flat[k] = UNSET
            both = sorted(set(flat) & set(lists))
            if both:
                say(f"sweep.arms.{name}", f"{', '.join(both)} both swept and set by the arm: choose one")
            arms[name] = flat
    if bad:
        raise ConfigError(bad)
    in_groups = {k for g in groups for k in g}
    axes = [(g, [tuple(vals) for vals in zip(*(lists[k] for k in g))]) for g in groups]
    axes += [((k,), [(v,) for v in vals]) for k, vals in lists.items() if k not in in_groups]
    return Sweep(arms, axes, list(seeds))


def check(path: Path, pts: list[Point], provider: str | None = None) -> list:
    """Each point loaded as `continuum run` would load it (nothing made); the specs, or ConfigError with
    every point's problems, each named by its point (a problem several points share: once, with their
    numbers)."""
    from continuum import experiment

    specs = []
    found: dict[tuple[str, str], list[Point]] = {}
    for p in pts:
        try:
            specs.append(experiment.load(path, materialize=False, provider=provider, text=p.text))
        except ConfigError as e:
            for i in e.issues:
                found.setdefault((i.key, i.message), []).append(p)
    if found:
        def where(ps: list[Point]) -> str:
            if len(ps) == 1:
                return f"point {ps[0].index} ({ps[0].label()})"
            return "every point" if len(ps) == len(pts) else "points " + ", ".join(str(p.index) for p in ps)
        raise ConfigError([ConfigIssue(f"{path} {where(ps)}", key, msg) for (key, msg), ps in found.items()])
    return specs


def _flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    """Nested tables as dotted keys: `[sweep.cell] uplink = [...]` is "cell.uplink" as written quoted."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _set(doc: dict, key: str, value: Any) -> str | None:
    """Set a dotted key in the parsed file, making its tables; why it cannot be set, or None."""
    parts = key.split(".")
    if any(not p for p in parts):
        return "an empty part in the key path"
    here = doc
    for i, p in enumerate(parts[:-1]):
        nxt = here.setdefault(p, {})
        if isinstance(nxt, list):
            return f"{'.'.join(parts[:i + 1])} is an array of tables ([[{p}]]): its entries cannot be swept"
        if not isinstance(nxt, dict):
            return f"{'.'.join(parts[:i + 1])} is a value, not a table: no key under it"
        here = nxt
    if value is UNSET:
        if parts[-1] not in here:
            return f"unset {key}: the file does not set it (nothing to remove)"
        del here[parts[-1]]
        return None
    if isinstance(here.get(parts[-1]), dict):
        return f"{key} is a table: sweep its keys one by one"
    here[parts[-1]] = value
    return None


def _show(v: Any) -> str:
    if v is UNSET:
        return "(unset)"
    if isinstance(v, bool):
        return str(v).lower()
    return v if isinstance(v, str) else f"{v:g}" if isinstance(v, (int, float)) else repr(v)
