"""Hub benchmarks: ranking quality on the golden sets, and the scale check (20 taps, 2,000 skills).

Both build real git repositories in a work folder and tap them exactly as a user would
(local paths with the explicit ``allow_file``), so reindex and update are measured end to end.
"""

from __future__ import annotations

import dataclasses
import random
import shutil
import statistics
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

from ep_mcp.config.model import Settings
from ep_mcp.eval.golden import GoldenQuery, load_golden
from ep_mcp.eval.metrics import first_rank, hit_rate, mean_reciprocal_rank
from ep_mcp.hub.git import Git
from ep_mcp.hub.hub import SkillHub
from ep_mcp.hub.results import ReindexReport
from ep_mcp.index.embed.base import Embedder

# golden file (pack) → the tap name its repository gets when tapped as <owner>/<repo>
GOLDEN_TAPS = {
    "anthropics-skills": ("anthropics", "skills"),
    "obra-superpowers": ("obra", "superpowers"),
}
SPLIT_KEYS = ("all", "negatives", "answerable_withheld")
MODES = {"lexical": ("lexical",), "dense": ("vector",), "hybrid": ("lexical", "vector")}


def make_repo(src: Path, dest: Path, env: Mapping[str, str]) -> Path:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(".git", ".ep-mcp"))
    Git(env).init_commit(dest, "snapshot")
    return dest


def golden_queries(golden_dir: Path) -> list[GoldenQuery]:
    """The golden queries of both repositories, expected files turned into skill ids (tap:dir);
    ``must_not`` is not scored by the hub bench."""
    out = []
    for pack, (owner, repo) in GOLDEN_TAPS.items():
        for q in load_golden(golden_dir / f"{pack}.yaml").queries:
            exp = tuple(f"{owner}__{repo}:{p.rsplit('/', 1)[0]}" for p in q.expected)
            out.append(dataclasses.replace(q, expected=exp, must_not=()))
    return out


def score(
    hub: SkillHub, queries: Sequence[GoldenQuery], *, smart: bool = False
) -> dict[str, object]:
    """hit@1, hit@5 and MRR per category (any expected skill counts), and negatives answered."""
    per: dict[str, list[int | None]] = defaultdict(list)
    negatives: list[int] = []
    rankers: dict[str, int] = defaultdict(int)
    misses: list[dict[str, object]] = []
    took: list[float] = []
    withheld = 0  # answerable queries answered "no skill matches"
    for q in queries:
        reply = hub.search(q.query, 10, smart=smart)
        took.append(reply.took_ms)
        rankers[reply.ranker] += 1
        ids = [r.skill.id for r in reply.results]
        if q.negative:
            negatives.append(int(bool(ids)))
            continue
        withheld += bool(reply.withheld)
        rank = first_rank(ids, q.expected)
        per[q.category].append(rank)
        if rank != 1:
            misses.append(
                {
                    "id": q.id,
                    "query": q.query,
                    "expected": q.expected[0],
                    "rank": rank,
                    "top": ids[:3],
                }
            )

    def agg(ranks: Sequence[int | None]) -> dict[str, float]:
        return {
            "n": len(ranks),
            "hit@1": round(hit_rate(ranks, 1), 3),
            "hit@5": round(hit_rate(ranks, 5), 3),
            "mrr": round(mean_reciprocal_rank(ranks), 3),
        }

    name_shaped = [r for c in ("keyword",) for r in per[c]]
    problem = [r for c in ("natural", "paraphrase", "multi-file") for r in per[c]]
    return {
        "all": agg([r for rows in per.values() for r in rows]),
        "name-shaped": agg(name_shaped),
        "problem-shaped": agg(problem),
        "by_category": {c: agg(rows) for c, rows in sorted(per.items())},
        "negatives": {"n": len(negatives), "answered": sum(negatives)},
        "answerable_withheld": withheld,
        "rankers": dict(rankers),
        "p50_ms": round(statistics.median(took), 2) if took else 0.0,
        "misses": misses,
    }


def tap_golden(
    skills_root: Path,
    work: Path,
    settings: Settings,
    env: Mapping[str, str],
    dense: bool,
    embedder: Embedder | str | None = "auto",
) -> tuple[Settings, ReindexReport, float]:
    """Both golden repositories tapped together under ``work`` and indexed: the settings that
    point at them, the reindex report and its seconds."""
    home = work / "home"
    settings = dataclasses.replace(settings, home=home)
    for pack, (owner, repo) in GOLDEN_TAPS.items():
        dest = work / "src" / owner / repo
        if not dest.exists():
            make_repo(skills_root / pack, dest, env)
    hub = SkillHub(settings, env, embedder=embedder, llm=None)
    try:
        for owner, repo in GOLDEN_TAPS.values():
            if not (home / "taps" / f"{owner}__{repo}").exists():
                hub.taps.add(str(work / "src" / owner / repo), allow_file=True)
        started = time.perf_counter()
        report = hub.reindex(dense=dense)
        return settings, report, time.perf_counter() - started
    finally:
        hub.close()


def quality(
    skills_root: Path,
    golden_dir: Path,
    work: Path,
    settings: Settings,
    env: Mapping[str, str],
    modes: Sequence[str],
    embedder: Embedder | str | None = "auto",
) -> dict[str, object]:
    """Tap both golden repositories together and score each retrieval mode."""
    dense = any(m != "lexical" for m in modes)
    settings, report, index_s = tap_golden(skills_root, work, settings, env, dense, embedder)
    queries = golden_queries(golden_dir)
    rows: dict[str, object] = {
        "index_seconds": round(index_s, 2),
        "reindex": report.reindexed,
        "queries": len(queries),
    }
    for mode in modes:
        hub = SkillHub(settings, env, embedder=embedder, llm=None, legs=MODES[mode])
        try:
            hub.search("warm up", 1)
            scored = score(hub, queries)
            scored["splits"] = {
                split: {k: v for k, v in score(hub, part).items() if k in SPLIT_KEYS}
                for split in ("dev", "test")
                if (part := [q for q in queries if q.split == split])
            }
            rows[mode] = scored
        finally:
            hub.close()
    return rows


_WORDS = (
    "deploy", "kubernetes", "terraform", "lambda", "cache", "redis", "postgres", "index",
    "query", "schema", "migrate", "react", "vue", "svelte", "css", "layout", "grid", "audio",
    "video", "codec", "image", "resize", "crop", "pdf", "table", "chart", "plot", "pandas",
    "numpy", "tensor", "train", "model", "eval", "metric", "log", "trace", "alert", "incident",
    "oncall", "review", "lint", "format", "test", "fuzz", "mock", "stub", "bench", "profile",
    "memory", "leak", "thread", "async", "queue", "kafka", "stream", "batch", "etl", "airflow",
    "spark", "dbt", "warehouse", "invoice", "billing", "tax", "payroll", "ledger", "email",
    "slack", "notion", "jira", "roadmap", "okr", "hiring", "onboarding", "security", "secret",
    "vault", "oauth", "jwt", "cors", "csrf", "xss", "sql", "injection", "backup", "restore",
    "snapshot", "disaster", "recovery", "dns", "tls", "proxy",
)  # fmt: skip


def _synthetic_skill(rng: random.Random, tap: int, i: int) -> tuple[str, str]:
    topic = rng.sample(_WORDS, 3)
    name = f"{topic[0]}-{topic[1]}-{tap:02d}{i:03d}"
    body = "\n\n".join(
        f"## {w.title()} step\n\n" + " ".join(rng.choices(_WORDS, k=60))
        for w in rng.sample(_WORDS, 4)
    )
    text = (
        f"---\nname: {name}\ndescription: Use when working on {topic[0]} {topic[1]} with "
        f"{topic[2]}.\n---\n# {name}\n\n{body}\n"
    )
    return name, text


def scale(
    work: Path,
    settings: Settings,
    env: Mapping[str, str],
    *,
    taps: int = 20,
    skills_per_tap: int = 100,
    queries: int = 200,
) -> dict[str, object]:
    """Lexical hub over ``taps * skills_per_tap`` synthetic skills: reindex and search times."""
    rng = random.Random(7)
    git = Git(env)
    home = work / "home"
    settings = dataclasses.replace(settings, home=home)
    hub = SkillHub(settings, env, embedder=None, llm=None)
    try:
        for t in range(taps):
            root = work / "src" / f"owner{t:02d}" / "skills"
            for i in range(skills_per_tap):
                name, text = _synthetic_skill(rng, t, i)
                (root / "skills" / name).mkdir(parents=True, exist_ok=True)
                (root / "skills" / name / "SKILL.md").write_text(text, encoding="utf-8")
            git.init_commit(root, "skills")
            hub.taps.add(str(root), allow_file=True)
        t0 = time.perf_counter()
        hub.reindex(dense=False)
        full_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        noop = hub.reindex()
        noop_s = time.perf_counter() - t0
        changed = work / "src" / "owner03" / "skills"
        name, text = _synthetic_skill(rng, 3, 999)
        (changed / "skills" / name).mkdir(parents=True)
        (changed / "skills" / name / "SKILL.md").write_text(text, encoding="utf-8")
        git.init_commit(changed, "one more skill")
        t0 = time.perf_counter()
        upd = hub.update()
        one_s = time.perf_counter() - t0
    finally:
        hub.close()
    hub = SkillHub(settings, env, embedder=None, llm=None)  # as `serve` opens it after reindex
    try:
        hub.search("warm up", 10)
        took = []
        for _ in range(queries):
            q = " ".join(rng.sample(_WORDS, rng.randint(2, 6)))
            took.append(hub.search(q, 10).took_ms)
        took.sort()
    finally:
        hub.close()
    return {
        "taps": taps,
        "skills": taps * skills_per_tap + 1,
        "full_reindex_s": round(full_s, 2),
        "noop_reindex_s": round(noop_s, 3),
        "noop_reused": noop.reused,
        "update_one_tap_s": round(one_s, 2),
        "update_reindexed": upd.report.reindexed,
        "update_reindex_s": round(sum(t.seconds for t in upd.report.taps), 3),
        "full_reindex_per_tap_s": round(full_s / taps, 3),
        "update_reused": upd.report.reused,
        "search_p50_ms": round(statistics.median(took), 2),
        "search_p95_ms": round(took[int(len(took) * 0.95) - 1], 2),
        "queries": queries,
    }
