"""Rewrite the packaged MiniLM graph into a faster one, once, and cache it on disk.

The packaged model stores every weight as int8 with one fp32 scale per output column, written as
``MatMul(x, Mul(Cast(W_int8), scale))``. onnxruntime folds that into fp32 weights, so all its
arithmetic is fp32. The rewrite keeps the very same int8 weights and makes the runtime use them:

* every weight MatMul (and the bias Add after it) becomes one ``DynamicQuantizeMatMul`` (activations
  quantized to uint8 per call; weights shifted to uint8 with zero point 128, because the AVX2
  uint8 x int8 kernel saturates on full-range int8 weights);
* the query, key and value projections of each layer become one packed GEMM, and the attention
  between them one ``MultiHeadAttention`` with a key padding mask (it also drops the exporter's
  ``IsNaN → Where`` guard after every softmax, which a padding mask never needs);
* ``x * 0.5 * (1 + erf(x / √2))`` becomes one ``Gelu``.

Activations are quantized per tensor, so a text's vector would depend on its batch neighbours:
the optimised model is run one text per call (see ``local.py``). ``onnx`` is needed only here,
when the cache is built; every failure leaves the caller on the packaged model.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

OPTIMIZER_VERSION = 1
NUM_HEADS = 12
HIDDEN = 384
MS = "com.microsoft"


class OptimizeError(Exception):
    """The graph is not the one this rewrite knows; the packaged model is used instead."""


def cache_key(source_sha256: str, runtime_version: str) -> str:
    """Name of the cached model: the source model, this rewrite's version and the runtime."""
    raw = f"{source_sha256}:{OPTIMIZER_VERSION}:{runtime_version}".encode()
    return f"minilm-l6-dq-{hashlib.sha256(raw).hexdigest()[:16]}"


# ---------------------------------------------------------------------------------------------
# graph helpers


class _Graph:
    def __init__(self, model: Any) -> None:
        from onnx import numpy_helper

        self.model = model
        self.g = model.graph
        self.inits = {i.name: i for i in self.g.initializer}
        self._np = numpy_helper
        self.refresh()

    def refresh(self) -> None:
        self.producer = {o: n for n in self.g.node for o in n.output}
        self.users: dict[str, list[Any]] = {}
        for n in self.g.node:
            for name in n.input:
                self.users.setdefault(name, []).append(n)

    def const(self, name: str) -> np.ndarray[Any, Any] | None:
        init = self.inits.get(name)
        return None if init is None else np.asarray(self._np.to_array(init))

    def scalar(self, name: str) -> float | None:
        value = self.const(name)
        return float(value) if value is not None and value.size == 1 else None

    def add_init(self, name: str, value: np.ndarray[Any, Any]) -> str:
        tensor = self._np.from_array(value, name)
        self.g.initializer.append(tensor)
        self.inits[name] = tensor
        return name

    def only_user(self, name: str, op: str) -> Any | None:
        users = self.users.get(name, [])
        return users[0] if len(users) == 1 and users[0].op_type == op else None

    def prune(self) -> None:
        """Drop nodes and initializers nothing reads (repeat until stable)."""
        outputs = {o.name for o in self.g.output}
        while True:
            used = {name for n in self.g.node for name in n.input} | outputs
            dead = [n for n in self.g.node if not any(o in used for o in n.output)]
            if not dead:
                break
            for n in dead:
                self.g.node.remove(n)
        used = {name for n in self.g.node for name in n.input}
        keep = [i for i in self.g.initializer if i.name in used]
        del self.g.initializer[:]
        self.g.initializer.extend(keep)
        self.inits = {i.name: i for i in keep}
        self.refresh()


class _Linear:
    """One ``x @ (W_int8 * scale) (+ bias)`` of the packaged graph."""

    def __init__(
        self,
        node: Any,
        weight: np.ndarray[Any, Any],
        scale: np.ndarray[Any, Any],
        bias: np.ndarray[Any, Any] | None,
        out: str,
        add: Any = None,
    ) -> None:
        self.node = node
        self.add = add  # the bias Add folded into this linear, if any
        self.x = node.input[0]
        self.weight = weight
        self.scale = scale
        self.bias = bias
        self.out = out  # the bias Add's output when there is one


def _linears(graph: _Graph) -> list[_Linear]:
    found = []
    for node in graph.g.node:
        if node.op_type != "MatMul":
            continue
        mul = graph.producer.get(node.input[1])
        if mul is None or mul.op_type != "Mul":
            continue
        cast = graph.producer.get(mul.input[0])
        if cast is None or cast.op_type != "Cast":
            continue
        weight, scale = graph.const(cast.input[0]), graph.const(mul.input[1])
        if weight is None or scale is None or weight.dtype != np.int8 or weight.ndim != 2:
            continue
        scale = scale.reshape(-1).astype(np.float32)
        if scale.shape[0] != weight.shape[1]:
            continue
        bias, out, folded = None, node.output[0], None
        add = graph.only_user(out, "Add")
        if add is not None:
            other = add.input[1] if add.input[0] == out else add.input[0]
            value = graph.const(other)
            if value is not None and value.shape == (weight.shape[1],):
                bias, out, folded = value.astype(np.float32), add.output[0], add
        found.append(_Linear(node, weight, scale, bias, out, folded))
    return found


def _dq_matmul(graph: _Graph, name: str, x: str, lin: _Linear, out: str) -> Any:
    from onnx import helper

    weight = (lin.weight.astype(np.int16) + 128).astype(np.uint8)
    inputs = [
        x,
        graph.add_init(f"{name}/W", weight),
        graph.add_init(f"{name}/scale", lin.scale),
        graph.add_init(f"{name}/zero", np.full(weight.shape[1], 128, np.uint8)),
    ]
    if lin.bias is not None:
        inputs.append(graph.add_init(f"{name}/bias", lin.bias))
    return helper.make_node("DynamicQuantizeMatMul", inputs, [out], name=name, domain=MS)


def _check_attention_output(graph: _Graph, o_proj: _Linear) -> None:
    """Check that the O projection reads the attention heads (MatMul → Transpose → Reshape)."""
    reshape = graph.producer.get(o_proj.x)
    transpose = graph.producer.get(reshape.input[0]) if reshape is not None else None
    matmul = graph.producer.get(transpose.input[0]) if transpose is not None else None
    ops = [getattr(n, "op_type", None) for n in (reshape, transpose, matmul)]
    if ops != ["Reshape", "Transpose", "MatMul"]:
        raise OptimizeError(f"unexpected attention output pattern {ops}")


def _fuse_layers(graph: _Graph, linears: list[_Linear], mask: str) -> int:
    """Q, K, V → one packed DynamicQuantizeMatMul + MultiHeadAttention; the rest → DQ MatMuls."""
    from onnx import helper

    if len(linears) % 6:
        raise OptimizeError(f"{len(linears)} weight MatMuls is not 6 per layer")
    head = HIDDEN // NUM_HEADS
    sizes = graph.add_init("dq/qkv_split", np.array([HIDDEN] * 3, np.int64))
    new: dict[str, list[Any]] = {}  # name of a node to replace → nodes to put in its place
    for layer in range(len(linears) // 6):
        q, k, v, o, f1, f2 = linears[layer * 6 : layer * 6 + 6]
        if not (q.x == k.x == v.x) or any(p.weight.shape != (HIDDEN, HIDDEN) for p in (q, k, v)):
            raise OptimizeError(f"layer {layer}: Q, K and V do not share their input")
        if q.bias is None or k.bias is None or v.bias is None:
            raise OptimizeError(f"layer {layer}: Q, K or V has no bias")
        _check_attention_output(graph, o)
        packed = _Linear(  # one GEMM for Q, K and V (the CPU kernel takes them split again)
            q.node,
            np.concatenate([q.weight, k.weight, v.weight], axis=1),
            np.concatenate([q.scale, k.scale, v.scale]),
            np.concatenate([q.bias, k.bias, v.bias]),
            q.out,
        )
        base = f"dq/layer{layer}"
        qkv = [f"{base}/q", f"{base}/k", f"{base}/v"]
        new[q.node.name] = [
            _dq_matmul(graph, f"{base}/qkv", q.x, packed, f"{base}/qkv_out"),
            helper.make_node(
                "Split", [f"{base}/qkv_out", sizes], qkv, name=f"{base}/split", axis=-1
            ),
            helper.make_node(
                "MultiHeadAttention",
                [*qkv, "", mask],
                [f"{base}/attn"],
                name=f"{base}/attn",
                domain=MS,
                num_heads=NUM_HEADS,
                scale=float(1.0 / np.sqrt(head)),
            ),
        ]
        new[o.node.name] = [_dq_matmul(graph, f"{base}/o", f"{base}/attn", o, o.out)]
        new[f1.node.name] = [_dq_matmul(graph, f"{base}/f1", f1.x, f1, f1.out)]
        new[f2.node.name] = [_dq_matmul(graph, f"{base}/f2", f2.x, f2, f2.out)]
        for lin in (q, k, v, o, f1, f2):
            if lin.add is not None:
                new[lin.add.name] = []
    if len({n.name for n in graph.g.node}) != len(graph.g.node):
        raise OptimizeError("node names are not unique")
    nodes: list[Any] = []
    for node in graph.g.node:
        nodes.extend(new.get(node.name, [node]))
    del graph.g.node[:]
    graph.g.node.extend(nodes)
    graph.refresh()
    return len(linears) // 6


def _fuse_gelu(graph: _Graph) -> int:
    """``x * (0.5 * (1 + erf(x / √2)))`` in any operand order → ``Gelu(x)``."""
    from onnx import helper

    count = 0
    for erf in [n for n in graph.g.node if n.op_type == "Erf"]:
        div = graph.producer.get(erf.input[0])
        if div is None or div.op_type != "Div" or graph.scalar(div.input[1]) is None:
            continue
        if abs(float(graph.scalar(div.input[1]) or 0) - np.sqrt(2)) > 1e-4:
            continue
        x = div.input[0]
        add = graph.only_user(erf.output[0], "Add")
        half = graph.only_user(add.output[0], "Mul") if add is not None else None
        final = graph.only_user(half.output[0], "Mul") if half is not None else None
        if add is None or half is None or final is None:
            continue
        one = [graph.scalar(i) for i in add.input if i != erf.output[0]]
        halves = [graph.scalar(i) for i in half.input if i != add.output[0]]
        if one != [1.0] or halves != [0.5] or x not in final.input:
            continue
        gelu = helper.make_node("Gelu", [x], [final.output[0]], name=f"dq/gelu{count}", domain=MS)
        graph.g.node.insert(list(graph.g.node).index(final), gelu)
        graph.g.node.remove(final)
        count += 1
    graph.refresh()
    return count


def optimize_graph(model: Any) -> Any:
    """Rewrite an all-MiniLM-L6-v2 int8-weight graph (see the module doc); raise OptimizeError."""
    from onnx import TensorProto, helper

    graph = _Graph(model)
    if "attention_mask" not in {i.name for i in graph.g.input}:
        raise OptimizeError("the model has no attention_mask input")
    mask = "dq/key_padding_mask"
    graph.g.node.insert(
        0, helper.make_node("Cast", ["attention_mask"], [mask], name=mask, to=TensorProto.INT32)
    )
    graph.refresh()
    layers = _fuse_layers(graph, _linears(graph), mask)
    graph.prune()
    gelus = _fuse_gelu(graph)
    graph.prune()
    if not layers or gelus != layers:
        raise OptimizeError(f"fused {layers} attention layers but {gelus} Gelu")
    leftovers = {n.op_type for n in graph.g.node} & {"Softmax", "IsNaN", "Erf"}
    if leftovers:
        raise OptimizeError(f"unfused {sorted(leftovers)} left in the graph")
    if not any(o.domain == MS for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MS, 1))
    return model


# ---------------------------------------------------------------------------------------------
# the on-disk cache


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_atomic(path: Path, data: bytes, check: Iterable[Callable[[Path], None]] = ()) -> None:
    """Write ``data`` to a private temp file beside ``path``, run ``check`` on it, rename it."""
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        for probe in check:
            probe(tmp)
        tmp.chmod(0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _verified(model: Path, meta: Path) -> bool:
    try:
        want = json.loads(meta.read_text(encoding="utf-8"))
        return bool(model.stat().st_size == want["size"] and sha256_file(model) == want["sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        return False


def cached_paths(source_sha256: str, cache_dir: Path, runtime_version: str) -> tuple[Path, Path]:
    """Where the optimised model for this source and runtime lives: (model, its metadata)."""
    key = cache_key(source_sha256, runtime_version)
    return cache_dir / f"{key}.onnx", cache_dir / f"{key}.json"


def is_built(source_sha256: str, cache_dir: Path, runtime_version: str) -> bool:
    """The optimised model for this source and runtime is in ``cache_dir`` and intact."""
    target, meta = cached_paths(source_sha256, cache_dir, runtime_version)
    return target.is_file() and meta.is_file() and _verified(target, meta)


def build_cached_model(
    source: Path,
    source_sha256: str,
    cache_dir: Path,
    runtime_version: str,
    check: Iterable[Callable[[Path], None]] = (),
) -> Path:
    """The optimised model for ``source`` in ``cache_dir``: verified if present, else built.

    Built files are written atomically (temp file + rename) with a ``.json`` beside them holding
    their size and sha256; a file that does not match it is rebuilt. Raises on any failure.
    ``check`` is called with each newly built model's path before it is published (the caller's
    smoke test), so a model that does not load or drifts is never cached. Concurrent builders
    each write their own temp file; the last rename wins and both files are identical.
    """
    key = cache_key(source_sha256, runtime_version)
    target, meta = cached_paths(source_sha256, cache_dir, runtime_version)
    if target.exists() and meta.exists() and _verified(target, meta):
        _built[key] = target
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    data = _reuse(key)  # built and checked earlier in this process for another folder
    if data is None:
        import onnx

        data = optimize_graph(onnx.load(str(source))).SerializeToString()
        _write_atomic(target, data, check)
    else:
        _write_atomic(target, data)
    info = {
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "source_sha256": source_sha256,
        "optimizer_version": OPTIMIZER_VERSION,
        "onnxruntime": runtime_version,
    }
    _write_atomic(meta, json.dumps(info, indent=1).encode())
    _built[key] = target
    logger.info("optimised embedding model written to %s", target)
    return target


_built: dict[str, Path] = {}  # key -> a verified copy made in this process (other homes reuse it)


def _reuse(key: str) -> bytes | None:
    """The bytes of a copy built earlier in this process, if it is still intact."""
    known = _built.get(key)
    if known is None or not _verified(known, known.with_suffix(".json")):
        return None
    return known.read_bytes()
