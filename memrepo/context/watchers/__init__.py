"""Topic watchers (seed 000 §4–5): which topics a message (or the agent's output) activates.

Tier 1 (patterns, keywords, globs, URLs, mentions) and Tier 2 (TF-IDF cosine) are local and
cheap; Tier 3 is a one-token LLM yes/no gate, cached, and replaced by the Tier 2 thresholds
when no model is reachable. :func:`memrepo.context.watchers.match.match_topics` runs the pipeline.

The names below are loaded on first use: ``capture end`` reads the gate log through
:mod:`~memrepo.context.watchers.feedback` and must not pay for the matchers' imports
(bench/perf/bench_capture.py times ``capture end``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memrepo.context.watchers.loader import Topic, TopicSet, load_topics
    from memrepo.context.watchers.match import Activation, MatchResult, match_topics

__all__ = ["Activation", "MatchResult", "Topic", "TopicSet", "load_topics", "match_topics"]
_WHERE = {"Topic": "loader", "TopicSet": "loader", "load_topics": "loader",
          "Activation": "match", "MatchResult": "match", "match_topics": "match"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
