"""The project's own English corpus: phrases assembled from small word lists by
a seeded grammar, so the data bank and the offline tokenizer need no
downloaded text. Phrases are built up to a target length in bytes, so the
experiment's payload distribution (default 100-200 bytes) is met exactly."""

from __future__ import annotations

import numpy as np

SUBJECTS = ["the driver", "our team", "a small robot", "the camera", "every passenger", "the new model",
            "my neighbour", "the edge server", "this sensor", "the operator", "a cyclist", "the delivery van"]
VERBS = ["reports", "detects", "sends", "measures", "needs", "forgets", "receives", "explains", "checks", "follows"]
OBJECTS = ["the traffic light", "a red bicycle", "the weather forecast", "the next station", "an open window",
           "the parking place", "a broken street lamp", "the morning train", "the latest update", "a lost dog"]
TAILS = ["before the meeting starts", "near the central station", "during the evening rush hour",
         "while it is raining", "on the way to the hospital", "after the software update", "in the old city centre",
         "without any delay", "at the end of the street", "because the network is slow"]
JOINERS = [", and then ", ", but ", " because ", " while ", ", so "]


def clause(rng: np.random.Generator) -> str:
    pick = lambda xs: xs[int(rng.integers(len(xs)))]  # noqa: E731
    return f"{pick(SUBJECTS)} {pick(VERBS)} {pick(OBJECTS)} {pick(TAILS)}"


FILLERS = {2: " a", 3: " to", 4: " now", 5: " then", 6: " again", 7: " really", 8: " quickly"}


def phrase(rng: np.random.Generator, target_bytes: int) -> str:
    """A sentence of exactly target_bytes bytes (at least 40): clauses word by
    word, then short filler words to land on the size, then a full stop."""
    words = clause(rng).split()
    text = ""
    while True:
        if not words:
            words = (JOINERS[int(rng.integers(len(JOINERS)))].strip(", ") + " " + clause(rng)).split()
        nxt = (" " if text else "") + words.pop(0)
        if len(text) + len(nxt) > target_bytes - 1:
            break
        text += nxt
    gap = target_bytes - 1 - len(text)
    if gap == 1:  # no filler is one byte long: give back the last word and fill its room
        text = text[: text.rfind(" ")]
        gap = target_bytes - 1 - len(text)
    while gap >= 2:
        fill = FILLERS[min(8, gap if gap != 9 else 5)]  # never leave a gap of 1
        text += fill
        gap -= len(fill)
    text = text[0].upper() + text[1:] + "."
    return text


def corpus(seed: int, n: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [phrase(rng, int(rng.integers(60, 220))) for _ in range(n)]
