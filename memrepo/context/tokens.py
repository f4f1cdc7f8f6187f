"""Token counting for budgets: a fast estimator by default, tiktoken when asked for.

The fast estimate is ~3.5 ASCII characters or 1.5 other characters per token: it
overestimates English a little (safer: a prompt never overflows) and does not collapse
on CJK text. It is additive up to rounding (``count(a) + count(b) >= count(a + b)``),
so budgets checked section by section also hold for the assembled prompt.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from memrepo.errors import MemrepoError

ASCII_CHARS_PER_TOKEN = 3.5
OTHER_CHARS_PER_TOKEN = 1.5
TOKENIZERS = ("fast", "tiktoken")


def estimate_tokens(text: str) -> int:
    """The fast estimate (no dependency, a few microseconds per KB)."""
    return math.ceil(estimate_units(text))


def estimate_units(text: str) -> float:
    """The fast estimate before it is rounded up: exactly additive, so a compile adds
    its sections' costs and the prompt is rounded once (a section at a time left ~100
    tokens of a 4,000-token budget of ~75 recalled passages unspent)."""
    if not text:
        return 0.0
    ascii_n = len(text.encode("ascii", "ignore"))
    return ascii_n / ASCII_CHARS_PER_TOKEN + (len(text) - ascii_n) / OTHER_CHARS_PER_TOKEN


def _tiktoken() -> Callable[[str], int]:
    try:
        import tiktoken  # type: ignore[import-not-found]

        enc = tiktoken.get_encoding("cl100k_base")
    except Exception as exc:  # not installed, or its BPE file cannot be fetched offline
        raise MemrepoError(
            f"context_compiler.tokenizer is 'tiktoken' but it cannot be loaded ({exc}); "
            "install tiktoken with its encoding cached, or use 'fast'"
        ) from None
    return lambda text: len(enc.encode(text, disallowed_special=())) if text else 0


def counter(name: str = "fast") -> Callable[[str], int]:
    """The token counter named by ``context_compiler.tokenizer``."""
    if name == "tiktoken":
        return _tiktoken()
    if name != "fast":
        raise MemrepoError(f"unknown tokenizer {name!r} (known: {', '.join(TOKENIZERS)})")
    return estimate_tokens


def cost(name: str, count: Callable[[str], int]) -> Callable[[str], float]:
    """What a budget is charged for a piece of text: the fast estimate unrounded (it
    adds up exactly); tiktoken's count as it is (it does not add up: the compile's last
    check on the whole prompt covers it)."""
    return estimate_units if name == "fast" else count


def kb_to_tokens(kb: float) -> int:
    """A KB budget of the config expressed in tokens (of ASCII text, the common case)."""
    return int(kb * 1024 / ASCII_CHARS_PER_TOKEN)
