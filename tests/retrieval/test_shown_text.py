"""A hit's text is shown from its first line of content; what is indexed and scored is the raw
span (a word only in a leading comment still finds the chunk)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ep_mcp.index.embed.fake import HashingEmbedder
from ep_mcp.retrieval import hits
from ep_mcp.retrieval.types import Hit, SearchRequest

from .test_engine import runtime

BODY = "# Kilns\n\nFire stoneware slowly to cone six.\n"
NOISE = {
    "comment": "<!-- context: section=concepts, topic=zebrafish -->\n",
    "frontmatter-residue": "---\ntitle: Kilns\n---\n---\nsources: zebrafish\n---\n",
    "context-line": "[context: zebrafish]\n",
}


@pytest.mark.parametrize("noise", NOISE.values(), ids=NOISE.keys())
def test_the_hit_text_starts_at_the_content_and_the_noise_is_still_indexed(
    noise: str, make_pack: Callable[[dict[str, str]], Path], tmp_path: Path
) -> None:
    rt = runtime(make_pack({"kilns.md": noise + BODY}), tmp_path, HashingEmbedder(64))
    try:
        (hit,) = rt.search(SearchRequest("zebrafish", k=1, reconstruct=True)).hits
        assert hit.text == BODY
        assert hit.to_dict()["text"] == BODY
        assert "zebrafish" in hit.extra["original_markdown"]  # the exact span, as indexed
        assert hit.extra["excerpt"] == "# Kilns Fire stoneware slowly to cone six."
        assert rt.store.term_counts(["zebrafish"])[0] == {"zebrafish": 1}  # BM25 sees it
    finally:
        rt.close()


def test_a_chunks_shown_text_is_worked_out_once_however_often_it_is_a_hit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stripped: list[str] = []
    real = hits.strip_leading_noise
    hits._shown.cache_clear()  # not worked out by an earlier run in this process
    monkeypatch.setattr(hits, "strip_leading_noise", lambda t: stripped.append(t) or real(t))
    raw = "<!-- context: kilns -->\nFire the kiln slowly to cone six; then let it cool."
    hit = Hit("k", "k.md", "Kilns", "", (), (), raw, 1.0, "h", None, 0, (1, 2))
    shown = [hits.as_shown(hit).text for _ in range(3)]
    assert shown == ["Fire the kiln slowly to cone six; then let it cool."] * 3
    assert stripped == [raw]
