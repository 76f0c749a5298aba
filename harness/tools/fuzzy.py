"""hermes' fuzzy find-and-replace for `patch` (`match = "fuzzy"`): a chain of ever looser strategies,
tried in order until one finds the text.

Modelled on NousResearch/hermes-agent's `tools/fuzzy_match.py` (`fuzzy_find_and_replace`, read 2026),
in this harness's own code: exact; line-trimmed (each line stripped); whitespace-normalised (runs of
spaces and tabs as one); indentation-flexible (leading whitespace ignored); escape-normalised (`\\n`,
`\\t` typed as text); trimmed boundary (first and last lines stripped); unicode-normalised (smart quotes,
dashes, special spaces as ASCII); block anchor (first and last lines equal, the middle at least 50%
similar, 70% when several blocks qualify); context-aware (every line at least 80% similar). The
first strategy that matches decides: several matches are an error unless `replace_all`, and the two
similarity strategies never replace more than one. What it leaves out: hermes' re-indentation of the
new text, its escape-drift and indentation guards and its Unicode preservation in the replacement.

Why it matters to a scheduler: when a sibling's edit has changed the text a patch was written against,
exact matching fails the patch loudly; the looser strategies may find a *similar* block elsewhere and
edit it, which no error reports ("patch applied to the wrong place after a concurrent edit"). It never
touches a world: `patch` reads and writes through its `ToolIO`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from difflib import SequenceMatcher

Span = tuple[int, int]

_UNICODE = {"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "\u2014": "--", "\u2013": "-",
            "\u2026": "...", "\u00a0": " ", "\u2212": "-", "\u2009": " ", "\u202f": " ", "\u3000": " "}


def _exact(content: str, pattern: str) -> list[Span]:
    spans: list[Span] = []
    start = content.find(pattern)
    while start != -1:
        spans.append((start, start + len(pattern)))
        start = content.find(pattern, start + len(pattern))
    return spans


def _line_spans(lines: list[str], first: int, count: int, length: int) -> Span:
    """The characters of `count` lines from line `first` (without the last line's newline)."""
    start = sum(len(line) + 1 for line in lines[:first])
    end = start + sum(len(line) + 1 for line in lines[first:first + count]) - 1
    return start, min(end, length)


def _by_lines(content: str, pattern: str, normal: Callable[[str], str]) -> list[Span]:
    """Blocks of lines equal to the pattern's lines once each line is normalised."""
    lines = content.split("\n")
    wanted = [normal(line) for line in pattern.split("\n")]
    seen = [normal(line) for line in lines]
    count = len(wanted)
    return [_line_spans(lines, i, count, len(content)) for i in range(len(lines) - count + 1)
            if seen[i:i + count] == wanted]


def _line_trimmed(content: str, pattern: str) -> list[Span]:
    return _by_lines(content, pattern, str.strip)


def _whitespace_normalised(content: str, pattern: str) -> list[Span]:
    """Runs of spaces and tabs as one space, anywhere (not only whole lines); spans mapped back."""
    normal: list[str] = []
    origin: list[int] = []  # the index in `content` of each character of `normal`
    for index, char in enumerate(content):
        if char in " \t" and normal and normal[-1] == " " and content[index - 1] in " \t":
            continue
        normal.append(" " if char in " \t" else char)
        origin.append(index)
    found = _exact("".join(normal), re.sub(r"[ \t]+", " ", pattern))
    return [(origin[start], origin[end - 1] + 1) for start, end in found if end > start]


def _indentation_flexible(content: str, pattern: str) -> list[Span]:
    return _by_lines(content, pattern, str.lstrip)


def _escape_normalised(content: str, pattern: str) -> list[Span]:
    unescaped = pattern.replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r")
    return [] if unescaped == pattern else _exact(content, unescaped)


def _trimmed_boundary(content: str, pattern: str) -> list[Span]:
    wanted = pattern.split("\n")
    lines = content.split("\n")
    count = len(wanted)

    def trimmed(block: list[str]) -> list[str]:
        block = list(block)
        block[0] = block[0].strip()
        block[-1] = block[-1].strip()
        return block

    target = trimmed(wanted)
    return [_line_spans(lines, i, count, len(content)) for i in range(len(lines) - count + 1)
            if trimmed(lines[i:i + count]) == target]


def _unicode_normalised(content: str, pattern: str) -> list[Span]:
    """Smart punctuation and special spaces as ASCII, line by line (so spans stay those of the file)."""
    def normal(line: str) -> str:
        for char, ascii_text in _UNICODE.items():
            line = line.replace(char, ascii_text)
        return line.strip()

    if not any(char in content or char in pattern for char in _UNICODE):
        return []
    return _by_lines(content, pattern, normal)


def _similar(a: str, b: str) -> float:
    return 1.0 if a == b else SequenceMatcher(None, a, b).ratio()


def _block_anchor(content: str, pattern: str) -> list[Span]:
    wanted = pattern.split("\n")
    if len(wanted) < 2:
        return []
    lines = content.split("\n")
    count = len(wanted)
    first, last = wanted[0].strip(), wanted[-1].strip()
    candidates = [i for i in range(len(lines) - count + 1)
                  if lines[i].strip() == first and lines[i + count - 1].strip() == last]
    threshold = 0.5 if len(candidates) == 1 else 0.7
    middle = "\n".join(wanted[1:-1])
    return [_line_spans(lines, i, count, len(content)) for i in candidates
            if count <= 2 or _similar("\n".join(lines[i + 1:i + count - 1]), middle) >= threshold]


def _context_aware(content: str, pattern: str) -> list[Span]:
    wanted = pattern.split("\n")
    lines = content.split("\n")
    count = len(wanted)
    spans: list[Span] = []
    for i in range(len(lines) - count + 1):
        block = lines[i:i + count]
        if _similar(wanted[0].strip(), block[0].strip()) < 0.8 or _similar(wanted[-1].strip(), block[-1].strip()) < 0.8:
            continue
        if all(_similar(w.strip(), c.strip()) >= 0.8 for w, c in zip(wanted, block, strict=True) if w.strip()):
            spans.append(_line_spans(lines, i, count, len(content)))
    return spans


#: The chain, in hermes' order.
STRATEGIES: tuple[tuple[str, Callable[[str, str], list[Span]]], ...] = (
    ("exact", _exact), ("line_trimmed", _line_trimmed), ("whitespace_normalized", _whitespace_normalised),
    ("indentation_flexible", _indentation_flexible), ("escape_normalized", _escape_normalised),
    ("trimmed_boundary", _trimmed_boundary), ("unicode_normalized", _unicode_normalised),
    ("block_anchor", _block_anchor), ("context_aware", _context_aware),
)
_SIMILARITY = frozenset({"block_anchor", "context_aware"})


def fuzzy_replace(content: str, old: str, new: str, replace_all: bool) -> tuple[str, int, str | None, str | None]:
    """(new content, replacements, the strategy that matched, None) or (content, 0, None, the error)."""
    for name, strategy in STRATEGIES:
        spans = strategy(content, old)
        if not spans:
            continue
        if len(spans) > 1 and not replace_all:
            return content, 0, None, (f"Found {len(spans)} matches for old_string. Provide more context to make it "
                                      "unique, or use replace_all=True.")
        if len(spans) > 1 and name in _SIMILARITY:
            return content, 0, None, (f"Found {len(spans)} approximate matches via the '{name}' strategy; "
                                      "replace_all only applies to exact matches.")
        patched = content
        for start, end in reversed(spans):
            patched = patched[:start] + new + patched[end:]
        return patched, len(spans), name, None
    return content, 0, None, "Could not find a match for old_string in the file"
