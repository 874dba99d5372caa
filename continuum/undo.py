"""An ExitStack whose undo steps never hide the error that caused the
teardown: each step's own failure is collected and reported afterwards
(Mahimahi's RAII habit, in Python). Steps run in reverse order of creation."""

from __future__ import annotations

import contextlib
from typing import Any, Callable

from continuum.errors import ProviderError


class Undo(contextlib.ExitStack):
    def __init__(self, say: Callable[[str], None] = lambda s: None):
        super().__init__()
        self.failures: list[str] = []
        self._say = say

    def callback(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Callable[..., Any]:  # type: ignore[override]
        def guarded() -> None:
            try:
                fn(*args, **kwargs)
            except BaseException as e:  # noqa: BLE001 - a cleanup step must not stop the others
                what = getattr(fn, "__qualname__", repr(fn))
                msg = f"cleanup step {what}{tuple(map(str, args))} failed: {e}"
                self.failures.append(msg)
                self._say(msg)

        return super().callback(guarded)

    def __exit__(self, *exc: Any) -> bool | None:
        suppressed = super().__exit__(*exc)
        if exc[0] is None and self.failures:
            raise ProviderError("teardown was incomplete (run `continuum destroy`):\n  " + "\n  ".join(self.failures))
        return suppressed
