"""hooks/check_size.py: binaries and oversized files are refused outside attachments/."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memrepo.hooks.check_size import main

if TYPE_CHECKING:
    from conftest import VRepo

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(2048)


def test_a_binary_outside_attachments_is_refused_with_its_size(vrepo: VRepo) -> None:
    vrepo.write("knowledge/reference/diagram.png", PNG)
    vrepo.add()
    code, out = vrepo.run_staged(main)
    assert code == 1
    assert out == (
        "knowledge/reference/diagram.png: error: binary file (2.0 KB) outside attachments/; "
        "binaries belong in attachments/ (stored with git LFS) [check-size]\n"
    )


def test_a_nul_byte_late_in_a_big_file_does_not_make_it_binary(vrepo: VRepo) -> None:
    vrepo.write("notes.txt", b"a" * 9000 + b"\x00")
    assert vrepo.run(main, "notes.txt") == (0, "")


def test_binaries_in_attachments_pass(vrepo: VRepo) -> None:
    vrepo.write("attachments/2026/diagram.png", PNG)
    vrepo.write("attachments/huge.txt", "x" * (2 * 1024 * 1024))
    vrepo.add()
    assert vrepo.run_staged(main) == (0, "")


def test_a_text_file_above_max_file_kb_is_refused(vrepo: VRepo) -> None:
    vrepo.write("memory-config.yaml", "validation:\n  max_file_kb: 2\n")
    vrepo.write("knowledge/reference/big.md", "y" * 3000)
    vrepo.write("knowledge/reference/small.md", "y" * 2048)
    vrepo.add()
    code, out = vrepo.run_staged(main)
    assert code == 1
    assert out == (
        "knowledge/reference/big.md: error: file is 2.9 KB, above validation.max_file_kb (2 KB); "
        "split it or move it to attachments/ [check-size]\n"
    )


def test_the_default_limit_is_1024_kb(vrepo: VRepo) -> None:
    vrepo.write("a.txt", "z" * (1024 * 1024))
    vrepo.write("b.txt", "z" * (1024 * 1024 + 1))
    code, out = vrepo.run(main, "a.txt", "b.txt")
    assert code == 1
    assert out.startswith("b.txt: error: file is 1024.0 KB, above validation.max_file_kb (1024 KB)")


def test_empty_deleted_and_symlinked_files_pass(vrepo: VRepo) -> None:
    vrepo.write("empty.txt", "")
    (vrepo.root / "link.png").symlink_to(vrepo.write("attachments/x.png", PNG))
    assert vrepo.run(main, "empty.txt", "gone.bin", "link.png") == (0, "")
