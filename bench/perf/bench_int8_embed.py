"""MiniLM's query and bulk embedding, float32 (the wheel's file as onnxruntime folds it)
against the int8-kernel rewrite (memrepo.index.int8_model), side by side in one process.

    python bench/perf/bench_int8_embed.py [--prompts 280]

The two sessions alternate prompt by prompt (bench messages), on the server's threads
(onnxruntime's default) and on one; then a bulk pass of 640 texts each, twice. The
rewrite goes to a temporary cache folder.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from results import add_record_option, record


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=280)
    add_record_option(ap)
    opts = ap.parse_args()
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="memrepo-int8-")
    from corpus import messages

    from memrepo.index import int8_model
    from memrepo.index.embedders import MiniLMEmbedder

    def session(model: str | bytes, threads: int = 0) -> MiniLMEmbedder:
        emb = MiniLMEmbedder()
        emb._session, emb._tokenizer = MiniLMEmbedder.session(model, threads), emb.tokenizer()
        return emb

    source = MiniLMEmbedder.model_file()
    rewritten = int8_model.model_bytes(source, MiniLMEmbedder.MODEL_SHA256)
    if rewritten is None:
        sys.exit("the rewrite failed (is onnx installed?)")
    runs = {"float32": session(str(source)), "int8": session(rewritten),
            "float32 1 thread": session(str(source), 1), "int8 1 thread": session(rewritten, 1)}
    prompts = messages(opts.prompts + 20, 100_000, seed=8)
    for p in prompts[:20]:
        for emb in runs.values():
            emb.embed([p])
    wall: dict[str, list[float]] = {n: [] for n in runs}
    cpu: dict[str, list[float]] = {n: [] for n in runs}
    for i, p in enumerate(prompts[20:]):
        for name, emb in (list(runs.items()) if i % 2 else list(runs.items())[::-1]):
            c0, t0 = time.process_time(), time.perf_counter()
            emb.embed([p])
            wall[name].append((time.perf_counter() - t0) * 1000)
            cpu[name].append((time.process_time() - c0) * 1000)
    print(f"a query's embed, p50 over {opts.prompts} bench prompts:")
    figures: dict[str, dict[str, float]] = {}
    for name in runs:
        figures[f"embed p50, {name}"] = {"wall_ms": statistics.median(wall[name]),
                                          "cpu_ms": statistics.median(cpu[name])}
        print(f"  {name:<18} {statistics.median(wall[name]):6.2f} ms  "
              f"(CPU {statistics.median(cpu[name]):.2f} ms)")
    texts = [" ".join(t) for t in zip(messages(640, 100_000, seed=5),
                                       messages(640, 100_000, seed=6),
                                       messages(640, 100_000, seed=7), strict=True)]
    print("bulk, 640 texts of three bench messages:")
    for rep in range(2):
        for name in ("float32", "int8"):
            t0 = time.perf_counter()
            runs[name].embed(texts)
            rate = len(texts) / (time.perf_counter() - t0)
            print(f"  pass {rep + 1} {name:<8} {rate:6.0f} texts/s")
            figures.setdefault("bulk texts/s", {})[f"pass {rep + 1} {name}"] = rate
    record(__file__, {"prompts": opts.prompts, **figures}, opts)


if __name__ == "__main__":
    main()
