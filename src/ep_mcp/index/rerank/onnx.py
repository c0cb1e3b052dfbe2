"""``reranker.kind: onnx``: a cross-encoder exported to ONNX, run with onnxruntime.

The user names the graph (``reranker.onnx_model``) and its ``tokenizer.json``; each (query,
passage) pair is encoded as the model was trained (the tokenizer's pair template, truncated to
``reranker.max_length`` tokens) and the graph's first output is the score: one logit per pair,
or the last column when it has two (``[not relevant, relevant]``). Both load on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ep_mcp.errors import ConfigError

BATCH = 16


class OnnxCrossEncoder:
    def __init__(self, model: Path, tokenizer: Path, max_length: int) -> None:
        self.model_path = model
        self.tokenizer_path = tokenizer
        self.max_length = max_length
        self._loaded: tuple[Any, Any, set[str]] | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return f"onnx/{self.model_path.stem}"

    def _load(self) -> tuple[Any, Any, set[str]]:
        with self._lock:
            if self._loaded is None:
                import onnxruntime
                from tokenizers import Tokenizer

                try:
                    tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
                except Exception as exc:  # the tokenizers library raises its own types
                    raise ConfigError(
                        f"reranker.tokenizer {self.tokenizer_path} cannot be read ({exc}) — "
                        "point it at the model's tokenizer.json"
                    ) from None
                tokenizer.enable_truncation(self.max_length)
                tokenizer.enable_padding()
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = 1  # the query path shares the cores
                try:
                    session = onnxruntime.InferenceSession(
                        str(self.model_path), options, providers=["CPUExecutionProvider"]
                    )
                except Exception as exc:  # onnxruntime raises its own types
                    raise ConfigError(
                        f"reranker.onnx_model {self.model_path} cannot be loaded ({exc}) — "
                        "point it at a cross-encoder exported to ONNX"
                    ) from None
                inputs = {i.name for i in session.get_inputs()}
                self._loaded = (tokenizer, session, inputs)
            return self._loaded

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        import numpy as np

        tokenizer, session, inputs = self._load()
        out: list[float] = []
        for start in range(0, len(passages), BATCH):
            batch = [(query, p) for p in passages[start : start + BATCH]]
            encoded = tokenizer.encode_batch(batch)
            feed = {
                "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
            }
            logits = np.asarray(
                session.run(None, {k: v for k, v in feed.items() if k in inputs})[0]
            )
            logits = logits.reshape(len(batch), -1)
            out.extend(float(v) for v in logits[:, -1])
        return out
