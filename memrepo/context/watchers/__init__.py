"""Topic watchers (seed 000 §4–5): which topics a message (or the agent's output) activates.

Tier 1 (patterns, keywords, globs, URLs, mentions) and Tier 2 (TF-IDF cosine) are local and
cheap; Tier 3 is a one-token LLM yes/no gate, cached, and replaced by the Tier 2 thresholds
when no model is reachable. :func:`memrepo.context.watchers.match.match_topics` runs the pipeline.
"""

from __future__ import annotations

from memrepo.context.watchers.loader import Topic, TopicSet, load_topics
from memrepo.context.watchers.match import Activation, MatchResult, match_topics

__all__ = ["Activation", "MatchResult", "Topic", "TopicSet", "load_topics", "match_topics"]
