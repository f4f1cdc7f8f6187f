"""Extraction: transcripts -> knowledge files, through named, versioned extractors.

``extractors`` (what each finds, where it writes), ``heuristics`` (the offline path),
``apply`` (ADD / UPDATE / SUPERSEDE / NONE and the in-memory workspace), ``entries``
(the line format, source references and the superseded marker), ``cache`` (LLM results),
``transcript`` (reading one), ``runner`` (the ``memory extract`` run and its commit).
"""

from memrepo.lifecycle.extract.extractors import REGISTRY
from memrepo.lifecycle.extract.runner import extract, select

__all__ = ["REGISTRY", "extract", "select"]
