"""``memory doctor`` checks for the index: present, at HEAD, right schema and embedder,
which vector mode this machine has, and hook errors still unresolved."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memrepo.health import Check
from memrepo.index import db as dbmod
from memrepo.index import embedders, gitsource, schema
from memrepo.index import log as hooklog
from memrepo.index.embedders import embedder_id
from memrepo.index.indexer import pending_vectors
from memrepo.index.paths import db_path, state_dir
from memrepo.index.schema import replies_recorded

if TYPE_CHECKING:
    from memrepo.repo import MemoryRepo

FIX = "memory index"


def checks(repo: MemoryRepo) -> list[Check]:
    out: list[Check] = []
    root = repo.root
    try:
        git_dir, head = gitsource.locate(root)
    except Exception as exc:
        return [Check("index", False, f"not a git repository ({exc})", "git init")]
    path = db_path(root)
    if not path.exists():
        out.append(Check("index", False, f"{path.name} is missing (search scans files)", FIX))
    else:
        try:
            con = dbmod.connect(path, readonly=True)
            try:
                meta = schema.get_meta(con)
                docs = con.execute("SELECT count(*) FROM documents").fetchone()[0]
                pending = pending_vectors(con, every_chunk=True)
            finally:
                con.close()
        except dbmod.DatabaseError as exc:
            meta, docs = None, 0
            out.append(
                Check("index", False, f"{path.name} cannot be read: {exc}", f"{FIX} --rebuild")
            )
        if meta is not None:
            out.extend(_meta_checks(repo, root, meta, docs, head, embedder_id))
            if meta.get("embedder", "none") != "none":
                out.append(Check(
                    "index vectors",
                    pending == 0,
                    f"{pending} chunk(s) wait for vectors (the hook leaves them to "
                    "'memory index'; search uses BM25 for them meanwhile)"
                    if pending else "every chunk has its vector",
                    FIX,
                    warning=True,
                ))
    name = repo.config["search"]["embedder"]
    missing = embedders.available(name)
    if missing:
        out.append(Check("embedder", False, f"search.embedder {name} is not installed", missing))
    backend = dbmod.vector_backend()
    out.append(Check("vector mode", True, f"{backend.mode}: {backend.detail}", warning=True))
    errors = hooklog.errors_since_last_success(state_dir(git_dir))
    if errors:
        last = errors[-1]
        out.append(
            Check(
                "index hook",
                False,
                f"{len(errors)} error(s) since the last good update; last {last.time} "
                f"({last.event}): {last.message}",
                FIX,
                warning=True,
            )
        )
    else:
        out.append(Check("index hook", True, "no unresolved errors in the hook log"))
    return out


def _meta_checks(repo, root, meta, docs, head, embedder_id) -> list[Check]:
    out: list[Check] = []
    version = meta.get("schema_version")
    if version != str(schema.SCHEMA_VERSION):
        out.append(
            Check("index schema", False, f"schema {version}, expected {schema.SCHEMA_VERSION}", FIX)
        )
    else:
        out.append(Check("index schema", True, f"schema {version}, {docs} files"))
    try:
        wanted = embedder_id(repo.config["search"]["embedder"])
    except Exception as exc:
        wanted = None
        out.append(Check("index embedder", False, f"config: {exc}", "memory config show"))
    if wanted is not None:
        have = meta.get("embedder")
        ok, detail = have == wanted, f"built with {have}, config wants {wanted}"
        replies = bool(repo.config["search"].get("reply_vectors", True))
        if ok and have != "none" and replies_recorded(meta) != replies:
            ok = False
            detail += (f", but search.reply_vectors is {str(replies).lower()} and the index "
                       f"was built with it {str(not replies).lower()}")
        out.append(Check("index embedder", ok, detail, FIX))
    indexed = meta.get("commit") or None
    if head is None:
        out.append(Check("index commit", True, "no commit yet"))
    elif indexed == head:
        out.append(Check("index commit", True, f"matches HEAD {head[:12]}"))
    else:
        behind = gitsource.commits_between(root, indexed, head) if indexed else None
        how = f"{behind} commit(s) behind" if behind else "not at HEAD"
        out.append(
            Check(
                "index commit",
                False,
                f"{how}: indexed {(indexed or 'nothing')[:12]}, HEAD {head[:12]}",
                FIX,
            )
        )
    return out
