"""The eval and bench commands end to end on tiny inputs, with the hashing embedder."""

import json
import os
from pathlib import Path

from click.testing import CliRunner

from ep_mcp.cli import main

from .test_beir import write_beir


def test_eval_prints_metrics_per_pack_and_category(tmp_path: Path) -> None:
    pack = tmp_path / "packs" / "demo"
    pack.mkdir(parents=True)
    (pack / "solar.md").write_text("# Solar\n\nSolar panels make direct current.\n")
    (pack / "wind.md").write_text("# Wind\n\nWind turbines spin in the breeze.\n")
    golden = tmp_path / "golden.yaml"
    golden.write_text(
        "pack: demo\nqueries:\n  - id: d1\n    query: solar panels\n"
        "    category: keyword\n    expected: [solar.md]\n"
    )
    args = [
        "eval",
        "--golden",
        str(golden),
        "--packs-root",
        str(tmp_path / "packs"),
        "--provider",
        "hashing",
        "--work",
        str(tmp_path / "work"),
    ]
    out = CliRunner().invoke(main, [*args, "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data[0]["overall"]["recall@1"] == 1.0 and data[0]["overall"]["mrr"] == 1.0
    table = CliRunner().invoke(main, args)
    assert "keyword" in table.output and "ALL" in table.output


def test_eval_runs_the_chosen_split_and_says_which(tmp_path: Path) -> None:
    pack = tmp_path / "packs" / "demo"
    (pack / "eval").mkdir(parents=True)
    (pack / "solar.md").write_text("# Solar\n\nSolar panels make direct current.\n")
    (pack / "eval" / "benchmark.yaml").write_text(
        "questions:\n  - {id: q9, category: refusal, question: 'best pizza dough'}\n"
    )
    golden = tmp_path / "golden.yaml"
    golden.write_text(
        "pack: demo\nrefusals: eval/benchmark.yaml\nqueries:\n"
        "  - {id: d1, query: solar panels, category: keyword, expected: [solar.md], split: dev}\n"
        "  - {id: t1, query: direct current, category: natural, expected: [solar.md], split: test}"
        "\n"
    )
    base = ["eval", "--golden", str(golden), "--packs-root", str(tmp_path / "packs")]
    base += ["--provider", "hashing", "--work", str(tmp_path / "work"), "--json"]
    counts = {}
    for split in ("dev", "test", "all"):
        out = CliRunner().invoke(main, [*base, "--split", split])
        assert out.exit_code == 0, out.output
        (rep,) = json.loads(out.output)
        assert rep["split"] == split
        counts[split] = (rep["overall"]["queries"], rep["overall"]["negatives"])
    assert counts == {"dev": (1, 0), "test": (2, 1), "all": (3, 1)}
    default = json.loads(CliRunner().invoke(main, base).output)
    assert default[0]["split"] == "dev"


def test_bench_beir_reports_ndcg_recall_and_latency(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "tiny")
    out = CliRunner().invoke(
        main,
        [
            "bench",
            "beir",
            str(folder),
            "--provider",
            "hashing",
            "--work",
            str(tmp_path / "work"),
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    rep = json.loads(out.output)
    assert rep["ndcg_at_10"] == 1.0 and rep["recall_at_100"] == 1.0 and rep["docs"] == 2
    assert rep["withheld"] == 0  # no confidence model fits the hashing embedder: none withheld
    assert rep["served_ndcg_at_10"] == 1.0 and (rep["served_k"], rep["k"]) == (10, 100)
    text = CliRunner().invoke(
        main,
        ["bench", "beir", str(folder), "--provider", "hashing", "--work", str(tmp_path / "work")],
    )
    served, floor_off = text.output.splitlines()[1:3]  # one command, both figures, served first
    assert "served (k=10" in served and "nDCG@10 1.0000" in served
    assert "floor off (k=100" in floor_off and "recall@100 1.0000" in floor_off
    lexical = CliRunner().invoke(
        main,
        [
            "bench",
            "beir",
            str(folder),
            "--mode",
            "lexical",
            "--provider",
            "hashing",
            "--work",
            str(tmp_path / "work"),
            "--json",
        ],
    )
    assert json.loads(lexical.output)["mode"] == "lexical"


def test_bench_query_times_a_pack_and_a_small_synthetic_index(tmp_path: Path) -> None:
    pack = tmp_path / "demo"
    pack.mkdir()
    (pack / "solar.md").write_text("# Solar\n\nSolar panels make direct current.\n")
    out = CliRunner().invoke(
        main,
        [
            "bench",
            "query",
            str(pack),
            "--provider",
            "hashing",
            "--repeats",
            "1",
            "--synthetic",
            "200",
            "--work",
            str(tmp_path / "work"),
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    labels = [r["label"] for r in json.loads(out.output)["latency"]]
    assert labels[0] == "embedding the query" and labels[-1].startswith("synthetic 200 chunks")


def test_eval_writes_a_report_a_self_contained_html_file_and_svg_plots(tmp_path: Path) -> None:
    pack = tmp_path / "packs" / "demo"
    pack.mkdir(parents=True)
    (pack / "solar.md").write_text("# Solar\n\nSolar panels make direct current.\n")
    (pack / "wind.md").write_text("# Wind <script>alert(1)</script>\n\nWind turbines spin.\n")
    golden = tmp_path / "golden.yaml"
    golden.write_text(
        "pack: demo\nqueries:\n  - id: d1\n    query: solar panels\n    category: keyword\n"
        "    expected: [solar.md]\n  - id: d2\n    query: <img src=x onerror=alert(1)> wind\n"
        "    category: natural\n    expected: [solar.md]\n"
    )
    base = ["eval", "--golden", str(golden), "--packs-root", str(tmp_path / "packs")]
    base += ["--provider", "hashing", "--work", str(tmp_path / "work")]
    first = CliRunner().invoke(main, [*base, "--report", str(tmp_path / "before.json")])
    assert first.exit_code == 0, first.output
    html, plots = tmp_path / "out.html", tmp_path / "plots"
    args = ["--baseline", str(tmp_path / "before.json"), "--html", str(html)]
    out = CliRunner().invoke(main, [*base, *args, "--plots", str(plots), "--label", "x"])
    assert out.exit_code == 0, out.output
    page = html.read_text(encoding="utf-8")
    assert 'id="per-pack"' in page and "<svg" in page and "Difference" in page
    assert "<script" not in page and "<img" not in page and "&lt;img src=x" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert sorted(p.name for p in plots.iterdir()) == [
        "eval-demo-categories.svg",
        "eval-diff.svg",
        "eval-per-pack.svg",
    ]
    saved = list((Path(os.environ["EP_MCP_HOME"]) / "reports").glob("eval-*.json"))
    assert len(saved) == 2  # both runs kept in the history the workbench reads
    report = json.loads((tmp_path / "before.json").read_text())
    assert report["format"] == "ep-mcp-eval/1"
    assert report["packs"][0]["queries"][0]["ranked"][0] == "solar.md"
