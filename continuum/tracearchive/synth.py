"""The project's own traces, made from a recipe (a model and its numbers,
with a seed where it is random), so every file is reproducible anywhere.

Randomness uses only `random.Random(seed).random()`, whose sequence Python
keeps stable across versions, and our own transforms of it; no library
distribution whose algorithm may change between releases.

Models:
- constant: `mbps`; a multiple of 12 Mbit/s is Mahimahi's classic form (n
  opportunities every millisecond, period 1 ms), any other rate the shortest
  period holding a whole number of opportunities (1 Mbit/s: one every 12 ms);
- steps: `segments = [[seconds, mbps], ...]`, one after the other;
- onoff: `mbps` while on, nothing while off; on and off periods exponential
  with means `mean_on_s` / `mean_off_s`, in whole milliseconds;
- markov: a birth-death chain over `states_mbps` (ascending), one step per
  second: stay, or with probability `move_per_s` move to a neighbouring
  state (either way when both exist). The numbers come from the per-second
  statistics of published traces, named in the recipe's `calibration`."""

from __future__ import annotations

import math
import random

import numpy as np

from continuum.tracearchive import mahimahi

MODELS = ("constant", "steps", "onoff", "markov")


class RecipeError(ValueError):
    pass


def _need(r: dict, key: str, kind=float):
    if key not in r:
        raise RecipeError(f"recipe model {r.get('model')!r} needs {key!r}")
    try:
        return kind(r[key])
    except (TypeError, ValueError):
        raise RecipeError(f"recipe key {key!r}: {r[key]!r} is not a {kind.__name__}") from None


def generate(recipe: dict) -> np.ndarray:
    model = recipe.get("model")
    if model == "constant":
        mbps = _need(recipe, "mbps")
        n = mbps / 12
        if mbps > 0 and abs(n - round(n)) < 1e-9:
            return np.ones(int(round(n)), dtype=np.int64)
        # the shortest period (ms) holding a whole number of opportunities
        bps = int(round(mbps * 1e6))
        for period in range(1, 60001):
            if (bps * period) % (mahimahi.OPPORTUNITY_BITS * 1000) == 0:
                break
        else:
            period = 1000
        return mahimahi.from_rates(np.full(period, bps, dtype=np.int64))
    if model == "steps":
        segs = recipe.get("segments")
        if not segs or not all(isinstance(s, (list, tuple)) and len(s) == 2 for s in segs):
            raise RecipeError("recipe model 'steps' needs segments = [[seconds, mbps], ...]")
        parts = [np.full(int(round(s * 1000)), int(round(m * 1e6)), dtype=np.int64) for s, m in segs]
        total = sum(len(p) for p in parts)
        ts = mahimahi.from_rates(np.concatenate(parts))
        return mahimahi.keep_period(ts, total)[0]
    if model == "onoff":
        mbps, on, off = _need(recipe, "mbps"), _need(recipe, "mean_on_s"), _need(recipe, "mean_off_s")
        dur = int(_need(recipe, "duration_s") * 1000)
        rng = random.Random(_need(recipe, "seed", int))
        rates = np.zeros(dur, dtype=np.int64)
        t, state = 0, True
        while t < dur:
            mean_ms = (on if state else off) * 1000
            length = max(1, int(round(-mean_ms * math.log(1.0 - rng.random()))))
            if state:
                rates[t:t + length] = int(round(mbps * 1e6))
            t += length
            state = not state
        return mahimahi.keep_period(mahimahi.from_rates(rates), dur)[0]
    if model == "markov":
        states = [float(x) for x in recipe.get("states_mbps", [])]
        if len(states) < 2 or states != sorted(states):
            raise RecipeError("recipe model 'markov' needs states_mbps: at least two rates, ascending")
        move = _need(recipe, "move_per_s")
        seconds = int(_need(recipe, "duration_s"))
        rng = random.Random(_need(recipe, "seed", int))
        i = int(recipe.get("start_state", len(states) // 2))
        rates = np.zeros(seconds * 1000, dtype=np.int64)
        for s in range(seconds):
            rates[s * 1000:(s + 1) * 1000] = int(round(states[i] * 1e6))
            if rng.random() < move:
                if i == 0:
                    i = 1
                elif i == len(states) - 1:
                    i -= 1
                else:
                    i += 1 if rng.random() < 0.5 else -1
        return mahimahi.keep_period(mahimahi.from_rates(rates), seconds * 1000)[0]
    raise RecipeError(f"unknown recipe model {model!r}; valid: {', '.join(MODELS)}")
