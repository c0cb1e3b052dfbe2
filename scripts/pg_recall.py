"""ANN recall of the postgres engine's vector leg against the exact numpy scan, on real
embeddings (docs/SCALING.md): the SciFact index ``ep-mcp bench beir`` built and loaded.

    EP_MCP_HOME=... python scripts/pg_recall.py INDEX.db DSN QUERIES.jsonl [SLUG]

For each query (embedded with the configured model) the top ``pool`` of the SQLite index's
exact scan is compared with the top ``pool`` PostgreSQL's HNSW returns at the ``ef_search``
``PgIndex`` uses for that pool (``index.pg_ef_search``, at least twice the pool, at most 1000).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from ep_mcp.config.load import load_settings
from ep_mcp.index.embed.factory import make_embedder
from ep_mcp.index.pgindex import PgIndex
from ep_mcp.index.store import Store


def main(index: Path, dsn: str, queries_file: Path, slug: str = "scifact") -> None:
    settings = load_settings(data={"index": {"engine": "postgres", "dsn": dsn}})
    embedder = make_embedder(settings)
    assert embedder is not None
    lines = queries_file.read_text(encoding="utf-8").splitlines()
    queries = [str(json.loads(line)["text"]) for line in lines if line.strip()]
    exact = Store(index, read_only=True, vector_engine="numpy")
    served = PgIndex.open(settings.index, slug)
    try:
        for pool in (80, 800):  # k 10 and k 100 at the default candidate_multiplier 8
            ef = min(1000, max(served.ef_search, 2 * pool))
            recalls = []
            for query in queries:
                vec = embedder.embed_query(query)
                want = {c for c, _ in exact.vector_top(vec, pool)}
                got = {c for c, _ in served.vector_top(vec, pool)}
                recalls.append(len(want & got) / len(want))
            print(
                f"pool {pool} ef_search {ef}: recall@{pool} mean {np.mean(recalls):.4f} "
                f"min {np.min(recalls):.3f} over {len(recalls)} queries"
            )
    finally:
        exact.close()
        served.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), *sys.argv[4:5])
