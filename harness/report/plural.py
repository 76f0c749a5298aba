"""A count in words: `1 run`, `2 runs`, `1 class`, `3 classes`.

Owns `count`, for every report line that puts a number before a noun (a line saying "after 1 runs"
reads as a bug in the tool). It never decides what is counted.
"""

from __future__ import annotations


def count(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and `noun`, the noun in the plural unless `n` is 1: `plural`, else `noun` + "es" after
    s, x, ch or sh (`class`), else + "s"."""
    if n == 1:
        return f"{n} {noun}"
    return f"{n} {plural or noun + ('es' if noun.endswith(('s', 'x', 'ch', 'sh')) else 's')}"
