"""The three rerank forms against real parts: fake HTTP servers on 127.0.0.1 (a Cohere-style
and a TEI-style `/rerank`, a chat model) and a tiny ONNX cross-encoder built here and run by
onnxruntime; then the guard (cache, budget, one error) and the factory."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ep_mcp.config.load import load_settings
from ep_mcp.config.model import RerankerKind, RerankerSettings
from ep_mcp.errors import ConfigError, RerankError
from ep_mcp.index.rerank import GuardedReranker, make_reranker
from ep_mcp.index.rerank.http import ChatReranker, RerankApi
from ep_mcp.index.rerank.onnx import OnnxCrossEncoder
from fake_rerankers import FakeRerankServer, serve

PASSAGES = ["bread needs a starter", "lava and magma erupt", "magma rises"]
QUERY = "where does magma erupt as lava"


@pytest.fixture
def server() -> Iterator[FakeRerankServer]:
    with serve() as fake:
        yield fake


def test_a_cohere_style_rerank_api_scores_every_passage_by_index(server: FakeRerankServer) -> None:
    api = RerankApi(f"{server.url}/v1/rerank", "bge-reranker-base", "sk-r", 2.0, "cohere")
    assert api.score(QUERY, PASSAGES) == [0.0, 3.0, 1.0]  # the reply was sorted by score
    path, headers, body = server.seen[0]
    assert path == "/v1/rerank" and headers["authorization"] == "Bearer sk-r"
    assert body == {
        "model": "bge-reranker-base",
        "query": QUERY,
        "documents": PASSAGES,
        "top_n": 3,
        "return_documents": False,
    }
    assert api.name == "http/bge-reranker-base"


def test_a_tei_style_rerank_api_sends_texts_and_no_key(server: FakeRerankServer) -> None:
    api = RerankApi(f"{server.url}/rerank", "ignored", None, 2.0, "tei")
    assert api.score(QUERY, PASSAGES) == [0.0, 3.0, 1.0]
    _, headers, body = server.seen[0]
    assert body == {"query": QUERY, "texts": PASSAGES} and "authorization" not in headers


def test_a_chat_model_scores_the_numbered_shortlist(server: FakeRerankServer) -> None:
    chat = ChatReranker(f"{server.url}/v1", "qwen2.5:3b", None, 2.0)
    assert chat.score(QUERY, PASSAGES) == [0.0, 3.0, 1.0]
    path, _, body = server.seen[0]
    assert path == "/v1/chat/completions" and body["model"] == "qwen2.5:3b"
    assert (
        body["temperature"] == 0 and "[2] lava and magma erupt" in body["messages"][-1]["content"]
    )


@pytest.mark.parametrize(("status", "message"), [(500, "HTTP 500"), (404, "HTTP 404")])
def test_a_rerank_server_that_refuses_is_a_rerank_error(
    server: FakeRerankServer, status: int, message: str
) -> None:
    server.status = status
    with pytest.raises(RerankError, match=message):
        RerankApi(f"{server.url}/v1/rerank", "m", None, 2.0, "cohere").score(QUERY, PASSAGES)


def test_an_unreachable_rerank_server_is_a_rerank_error_naming_no_url() -> None:
    """The message reaches callers (notes): credentials or host names in the URL never."""
    api = RerankApi("http://svc:s3cret@127.0.0.1:9/rerank", "m", None, 0.5, "cohere")
    with pytest.raises(RerankError, match="could not be reached") as caught:
        api.score(QUERY, PASSAGES)
    assert "s3cret" not in str(caught.value) and "127.0.0.1" not in str(caught.value)


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity"])
def test_a_score_that_is_not_a_number_is_a_rerank_error(server: FakeRerankServer, bad: str) -> None:
    server.raw = '{"results": [{"index": 0, "relevance_score": ' + bad + "}]}"
    guard = GuardedReranker(RerankApi(f"{server.url}/v1/rerank", "m", None, 2.0, "cohere"), 2000)
    with pytest.raises(RerankError, match="not a number"):
        guard.score(QUERY, PASSAGES[:1])


def test_a_reply_past_the_size_limit_is_cut_off(
    server: FakeRerankServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ep_mcp.index.rerank import http

    monkeypatch.setattr(http, "MAX_REPLY_BYTES", 64)
    server.raw = (
        '{"results": [' + ", ".join('{"index": 0, "relevance_score": 1}' for _ in range(9)) + "]}"
    )
    with pytest.raises(RerankError, match="more than 64 bytes"):
        RerankApi(f"{server.url}/v1/rerank", "m", None, 2.0, "cohere").score(QUERY, PASSAGES[:1])


# -- a tiny ONNX cross-encoder: the score is the number of "lava" tokens in the pair -------------

VOCAB = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "lava": 4, "magma": 5, "bread": 6}


def tiny_cross_encoder(folder: Path) -> tuple[Path, Path]:
    import onnx
    from onnx import TensorProto, helper
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    tokenizer = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    tokenizer_path = folder / "tokenizer.json"
    tokenizer.save(str(tokenizer_path))
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["n", "l"])
    mask = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["n", "l"])
    types = helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["n", "l"])
    logits = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["n", 1])
    lava = helper.make_tensor("lava", TensorProto.INT64, [], [VOCAB["lava"]])
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    nodes = [
        helper.make_node("Equal", ["input_ids", "lava"], ["is_lava"]),
        helper.make_node("Cast", ["is_lava"], ["lava_f"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["lava_f", "mask_f"], ["counted"]),
        helper.make_node("ReduceSum", ["counted", "axes"], ["logits"], keepdims=1),
    ]
    graph = helper.make_graph(nodes, "tiny", [ids, mask, types], [logits], [lava, axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    model_path = folder / "cross-encoder.onnx"
    onnx.save(model, str(model_path))
    return model_path, tokenizer_path


def test_an_onnx_cross_encoder_scores_each_pair_with_onnxruntime(tmp_path: Path) -> None:
    model, tokenizer = tiny_cross_encoder(tmp_path)
    encoder = OnnxCrossEncoder(model, tokenizer, max_length=512)
    assert encoder.name == "onnx/cross-encoder"
    passages = ["bread bread", "lava lava lava", "lava magma"]
    assert encoder.score("lava", passages) == [1.0, 4.0, 2.0]  # the query's own token counts
    many = [f"lava {'bread ' * i}" for i in range(40)]  # more than one batch
    assert encoder.score("magma", many) == [1.0] * 40


def test_pairs_are_cut_to_max_length_tokens(tmp_path: Path) -> None:
    model, tokenizer = tiny_cross_encoder(tmp_path)
    encoder = OnnxCrossEncoder(model, tokenizer, max_length=16)
    (score,) = encoder.score("magma", ["lava " * 1000])
    assert 0 < score <= 16


def test_an_unreadable_model_says_which_key_to_fix(tmp_path: Path) -> None:
    model, tokenizer = tiny_cross_encoder(tmp_path)
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a graph")
    with pytest.raises(ConfigError, match=r"reranker\.onnx_model .* cannot be loaded"):
        OnnxCrossEncoder(broken, tokenizer, 512).score("q", ["p"])
    with pytest.raises(ConfigError, match=r"reranker\.tokenizer .* cannot be read"):
        OnnxCrossEncoder(model, tmp_path / "missing.json", 512).score("q", ["p"])


# -- the guard -----------------------------------------------------------------------------------


def test_scores_are_cached_per_query_and_passage(server: FakeRerankServer) -> None:
    guard = GuardedReranker(RerankApi(f"{server.url}/rerank", "m", None, 2.0, "tei"), 2000)
    first = guard.score(QUERY, PASSAGES)
    assert guard.score(QUERY, PASSAGES) == first and len(server.seen) == 1
    guard.score(QUERY, [*PASSAGES, "lava"])  # only the new passage is sent
    assert server.seen[1][2]["texts"] == ["lava"]
    guard.score("another query", PASSAGES[:1])
    assert len(server.seen) == 3


def test_a_hanging_reranker_costs_at_most_its_budget(server: FakeRerankServer) -> None:
    server.hang = True
    slow_client = RerankApi(f"{server.url}/rerank", "m", None, 5.0, "tei")  # the guard decides
    guard = GuardedReranker(slow_client, 200)
    with pytest.raises(RerankError, match=r"took longer than its 200 ms budget"):
        guard.score(QUERY, PASSAGES)
    server.release.set()


def test_a_slow_reranker_never_has_more_than_two_calls_running() -> None:
    release = threading.Event()
    started: list[int] = []

    class Slow:
        name = "slow"

        def score(self, query: str, passages: list[str]) -> list[float]:
            started.append(1)
            release.wait(30)
            return [1.0] * len(passages)

    guard = GuardedReranker(Slow(), 10)
    try:
        for i in range(5):
            with pytest.raises(RerankError) as caught:
                guard.score(f"q{i}", ["p"])
            if i >= 2:  # both slots are held by the calls still running
                assert "still answering 2 earlier queries" in str(caught.value)
        for _ in range(1000):  # the two threads may not have begun yet: a bounded wait
            if len(started) >= 2:
                break
            release.wait(0.01)
        assert len(started) == 2  # the other three never started a call
    finally:
        release.set()


def test_every_failure_of_the_inner_reranker_is_one_rerank_error() -> None:
    class Broken:
        name = "broken"

        def score(self, query: str, passages: object) -> list[float]:
            raise RuntimeError("segfault-ish")

    class Short:
        name = "short"

        def score(self, query: str, passages: list[str]) -> list[float]:
            return [1.0] * (len(passages) - 1)

    with pytest.raises(RerankError, match=r"reranker broken failed \(segfault-ish\)"):
        GuardedReranker(Broken(), 1000).score("q", ["a"])
    with pytest.raises(RerankError, match="returned 1 scores for 2 passages"):
        GuardedReranker(Short(), 1000).score("q", ["a", "b"])


# -- the factory and the config ------------------------------------------------------------------


def test_make_reranker_builds_each_kind_behind_the_guard(tmp_path: Path) -> None:
    assert make_reranker(RerankerSettings()) is None
    url = "http://127.0.0.1:9/rerank"
    made = {
        kind: make_reranker(
            RerankerSettings(
                enabled=True,
                kind=kind,
                endpoint=url,
                onnx_model=tmp_path / "m.onnx",
                tokenizer=tmp_path / "t.json",
            )
        )
        for kind in RerankerKind
    }
    assert all(isinstance(r, GuardedReranker) for r in made.values())
    inner = {kind: type(r.inner).__name__ for kind, r in made.items() if r is not None}
    assert inner == {
        RerankerKind.HTTP: "RerankApi",
        RerankerKind.CHAT: "ChatReranker",
        RerankerKind.ONNX: "OnnxCrossEncoder",
        RerankerKind.SENTENCE_TRANSFORMERS: "CrossEncoderReranker",
    }
    with pytest.raises(ConfigError, match=r"reranker\.endpoint: reranker\.kind http needs it"):
        make_reranker(RerankerSettings(enabled=True, kind=RerankerKind.HTTP))
    same = RerankerSettings(enabled=True, kind=RerankerKind.HTTP, endpoint=url, model="m")
    assert make_reranker(same) is make_reranker(dataclasses.replace(same))  # one per process


def test_the_config_names_what_each_reranker_kind_needs(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(data={"reranker": {"enabled": True, "kind": "onnx", "api_style": "teii"}})
    message = str(caught.value)
    assert "reranker.api_style: must be cohere or tei — got 'teii' — did you mean tei?" in message
    with pytest.raises(ConfigError) as caught:
        load_settings(data={"reranker": {"enabled": True, "kind": "onnx"}})
    assert "reranker.onnx_model: reranker.kind onnx needs it" in str(caught.value)
    assert "reranker.tokenizer: reranker.kind onnx needs it" in str(caught.value)
    with pytest.raises(ConfigError, match=r"reranker\.kind"):
        load_settings(data={"reranker": {"kind": "cross"}})
    with pytest.raises(ConfigError, match=r"reranker\.model: name the model the chat server"):
        load_settings(data={"reranker": {"enabled": True, "kind": "chat", "endpoint": "http://h"}})
    legacy = load_settings(data={"reranker": {"enabled": True}})  # the reference's meaning
    assert (
        legacy.reranker.kind == "sentence-transformers" and json.dumps(legacy.reranker.pool) == "20"
    )
