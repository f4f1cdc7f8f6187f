"""Keep binaries and oversized files out of the text layers.

Everything outside attachments/ is read by the indexer, diffed and loaded into prompts;
a binary or a huge file there bloats history for good. Binaries (a NUL byte in the first
8 KB, git's own test) and files above validation.max_file_kb belong in attachments/,
which .gitattributes stores with git LFS. A compressed archive (``archive/**.md.gz``) is
sniffed and measured as the text it holds, so compression is no way past the limit.
"""

from __future__ import annotations

from collections.abc import Sequence

from .engine import Context, kb, run_main

CHECK_ID = "check-size"
EXEMPT = ("attachments/",)


def check(paths: Sequence[str], ctx: Context) -> None:
    """Reject binary and oversized files outside attachments/."""
    max_kb = float(ctx.setting("max_file_kb"))
    for path in paths:
        if path.startswith(EXEMPT):
            continue
        head = ctx.sniff(path, CHECK_ID)  # first: a gzip file's size is its text's
        size = ctx.size(path)
        if size is None:
            continue  # deleted, a symlink or a submodule: stored as a few bytes at most
        if head is not None and b"\0" in head:
            ctx.report.error(
                path,
                None,
                f"binary file ({kb(size)}) outside attachments/; "
                "binaries belong in attachments/ (stored with git LFS)",
                CHECK_ID,
            )
        elif size > max_kb * 1024:
            ctx.report.error(
                path,
                None,
                f"file is {kb(size)}, above validation.max_file_kb ({max_kb:g} KB); "
                "split it or move it to attachments/",
                CHECK_ID,
            )


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(argv, [(CHECK_ID, check)], "Reject binary and oversized files.")


if __name__ == "__main__":
    raise SystemExit(main())
