"""Rebuild memrepo's word-neighbour table (memrepo/index/data/all-MiniLM-L6-v2/neighbours.tsv).

    python tools/build_neighbours.py        # needs the minilm extra and numpy; ~2-3 min

Every whole lower-case ASCII word of all-MiniLM-L6-v2's own vocabulary (3+ letters, not a
stop word) is embedded alone by the model memrepo ships for ``search.embedder: minilm``
(Model2Vec-style); each keeps its 5 nearest words at cosine >= 0.5. The output is sorted
bytewise so memrepo.index.expand can binary-search it. Deterministic: the same model and
tokenizer give the same file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memrepo.index.embedders import MiniLMEmbedder  # noqa: E402
from memrepo.index.expand import TABLE  # noqa: E402
from memrepo.index.query import STOP_WORDS  # noqa: E402

KEEP, MIN_COSINE = 5, 0.5


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.parse_args()  # --help only: it takes no options
    vocab = json.loads((TABLE.parent / "tokenizer.json").read_text())["model"]["vocab"]
    words = sorted(w for w in vocab if w.isalpha() and w.isascii() and len(w) >= 3
                   and w.islower() and w not in STOP_WORDS)
    t0 = time.perf_counter()
    model = MiniLMEmbedder()
    vecs = [v for i in range(0, len(words), 512) for v in model.embed(words[i : i + 512])]
    m = np.frombuffer(b"".join(vecs), dtype="<f4").reshape(len(words), -1)
    print(f"embedded {len(words)} words in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    lines = []
    for start in range(0, len(words), 2048):
        sims = m[start : start + 2048] @ m.T
        for row, i in enumerate(range(start, min(start + 2048, len(words)))):
            sims[row, i] = -1.0
            top = np.argpartition(-sims[row], KEEP)[:KEEP]
            near = sorted(((float(sims[row, j]), words[j]) for j in top
                           if sims[row, j] >= MIN_COSINE), reverse=True)
            if near:
                lines.append(words[i] + "\t" + " ".join(w for _s, w in near))
    lines.sort()
    TABLE.write_text("\n".join(lines) + "\n", encoding="ascii")
    print(f"{TABLE}: {len(lines)} words, {TABLE.stat().st_size} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
