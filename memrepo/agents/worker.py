"""The detached process of a capture, flush or end hook (``python -m memrepo.agents.worker
HARNESS EVENT ROOT``, the payload on stdin): its own session, so it outlives the hook and
the agent's process group; its outcome goes to the agents log (memrepo.agents.state).

It lowers its own priority before importing anything heavy: its imports, parsing and
commit must not slow the agent (or the hook that just returned) on a busy machine.
"""

from __future__ import annotations

import contextlib
import os
import sys

#: How much nicer than the agent the detached work runs.
NICE = 10

if __name__ == "__main__":
    with contextlib.suppress(OSError, AttributeError):
        os.nice(NICE)
    from memrepo.agents.events import run_worker

    sys.exit(run_worker(sys.argv[1:]))
