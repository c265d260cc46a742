"""A progress bar for push and pull: tqdm's when it is installed, else a
minimal one on stderr; shown only on a terminal unless asked for."""

import sys
import time
from typing import Optional


class _Minimal:
    def __init__(self, total: int, desc: str) -> None:
        self.total, self.desc, self.n = total, desc, 0
        self.last = 0.0

    def update(self, n: int) -> None:
        self.n += n
        now = time.monotonic()
        if now - self.last >= 0.1 or self.n >= self.total:
            self.last = now
            if not self.total:
                sys.stderr.write("\r%s %d bytes" % (self.desc, self.n))
                sys.stderr.flush()
                return
            pct = 100.0 * self.n / self.total
            width = 30
            done = int(width * pct / 100)
            sys.stderr.write(
                "\r%s [%s%s] %5.1f%% %d/%d bytes"
                % (self.desc, "#" * done, "." * (width - done), pct, self.n, self.total)
            )
            sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()


class _Off:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def bar(progress: Optional[bool], total: int, desc: str):
    """``progress``: True shows a bar, False never, None only when stderr is a terminal."""
    if progress is None:
        progress = sys.stderr.isatty()
    if not progress:
        return _Off()
    try:
        from tqdm import tqdm  # type: ignore

        return tqdm(total=total or None, desc=desc, unit="B", unit_scale=True, leave=False)
    except ImportError:
        return _Minimal(total, desc)
