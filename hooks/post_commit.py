"""What the post-commit, post-merge, post-checkout and post-rewrite hooks call: the
post-commit indexer.

``run_git_event`` is the entry (the installed hooks through ``memory hook``, and memrepo's
own commits in-process). ``on_git_event`` brings the index to HEAD from the tree diff and
must never hurt the commit: it never raises, never prints, never waits for another indexer
(that one picks the change up), and logs every outcome to ``<git-dir>/memrepo/index.log``
for ``memory doctor``. It imports only apsw (:mod:`memrepo.index.db`) and the index's own
light modules: no numpy, no YAML, no click.

When there is no ``memory.db`` yet it does nothing but log a hint: a first build of a
large repo takes minutes, which no commit should wait for (``memory index`` builds it).
An index that needs a rebuild (schema or embedder changed, history rewritten past gc)
is left alone the same way and reported.
"""

from __future__ import annotations

import pathlib
import sys

from memrepo.layout import CONFIG_FILE

#: The git events memrepo keeps the index up to date on (the one list: ``memory hook``'s
#: names and the hooks ``memory init`` installs are derived from it).
GIT_EVENTS = ("post-commit", "post-merge", "post-checkout", "post-rewrite")


def run_git_event(root: pathlib.Path, event: str) -> None:
    """Forward a git event to the indexer in a memory repo; swallow everything (it is
    logged there)."""
    if not (root / CONFIG_FILE).is_file():
        return
    try:
        on_git_event(root, event)
    except Exception as exc:  # on_git_event logs its own errors; this is the last net
        print(f"memrepo: {event} hook failed: {exc} (see 'memory doctor')", file=sys.stderr)


def on_git_event(root: pathlib.Path, event: str) -> None:
    """Incrementally index HEAD after a git event; errors go to the log, never up."""
    state = None
    try:
        from memrepo.index import gitsource
        from memrepo.index import log as hooklog
        from memrepo.index.indexer import NeedsRebuild, NoIndex, sync
        from memrepo.index.paths import db_path, state_dir

        root = pathlib.Path(root)
        located = gitsource.locate(root)
        state = state_dir(located[0])
        if not db_path(root).exists():
            hooklog.write(state, "INFO", event, "no index yet: run 'memory index'")
            return
        try:
            res = sync(root, hook=True, located=located)
        except (NoIndex, NeedsRebuild) as exc:
            hooklog.write(state, "ERROR", event, f"{exc}; run 'memory index' to rebuild")
            return
        if res is None:
            hooklog.write(state, "INFO", event, "another indexer is running; it will catch up")
            return
        msg = (
            f"{res.mode} to {(res.commit or '')[:12]}: +{res.added} ~{res.updated} -{res.removed} "
            f"files in {res.seconds * 1000:.0f} ms"
        )
        if res.pending_vectors:  # never embedded here: a resident server or a worker does it
            from memrepo.index.catchup import after_commit

            msg += (f"; {res.pending_vectors} chunks to embed: "
                    f"{after_commit(root, state)}")
        for note in res.notes:  # e.g. files skipped for a name that is not UTF-8
            msg += f"; {note}"
        hooklog.write(state, "OK", event, msg)
    except BaseException as exc:
        try:
            import traceback

            from memrepo.index import log as hooklog

            where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
            at = f" ({pathlib.Path(where.filename).name}:{where.lineno})" if where else ""
            if state is None:
                from memrepo.index import gitsource
                from memrepo.index.paths import state_dir

                state = state_dir(gitsource.locate(pathlib.Path(root))[0])
            hooklog.write(state, "ERROR", event, f"{type(exc).__name__}: {exc}{at}")
        except BaseException:
            pass
