"""No private path in the clear: a file ``private.paths`` names must be stored encrypted.

git-crypt encrypts a file when ``git add`` runs its clean filter, which needs the
attribute (``.gitattributes``, written by ``memory private init``) and the filter defined
in this clone (``git-crypt init`` or ``git-crypt unlock``). A clone without either stores
the file as it is, and the next push gives it to the remote in the clear: refused here,
at commit time, and by the server-side hook (``memory verify`` too). Costs nothing when
``private.paths`` is empty or no staged path is private.
"""

from __future__ import annotations

from collections.abc import Sequence

from memrepo import git, gitcrypt
from memrepo.errors import MemrepoError

from .engine import BlobContext, Context, run_main

CHECK_ID = "check-private"
FIX = ("run `memory private init` (or `git-crypt unlock KEYFILE` in a clone of an "
       "encrypted repo), then stage it again")


def _stored(paths: Sequence[str], ctx: Context) -> dict[str, bytes | None]:
    """The blobs ``paths`` have in the commit being made: the Context's own when it reads
    blobs, else git's index (a hook run on file names)."""
    if isinstance(ctx, BlobContext):
        return {p: ctx.stored(p) for p in paths}
    try:
        blobs = git.read_blobs(ctx.root, [f":{p}" for p in paths])
    except (MemrepoError, OSError):
        return {}
    return {p: blobs.get(f":{p}") for p in paths}


def check(paths: Sequence[str], ctx: Context) -> None:
    """Every staged private path whose blob is not git-crypt ciphertext."""
    match = gitcrypt.Matcher(ctx.config["private"]["paths"])
    private = [p for p in paths if match and match(p) and "\n" not in p]
    if not private:
        return
    for path, blob in _stored(private, ctx).items():
        if blob is not None and not gitcrypt.is_ciphertext(blob):
            ctx.report.error(
                path, None, "a private path (private.paths) in the clear: git-crypt did not "
                f"encrypt it, so a push would give it to the remote readable; {FIX}",
                CHECK_ID,
            )


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(argv, [(CHECK_ID, check)], "Refuse private paths staged unencrypted.")


if __name__ == "__main__":
    raise SystemExit(main())
