"""`ep-mcp eval` served from the postgres engine (a real PostgreSQL + pgvector, fixture
``postgres_database``): each pack is built in SQLite, loaded, and the report is SQLite's."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from ep_mcp.cli import main


def _golden(tmp_path: Path) -> tuple[Path, Path]:
    pack = tmp_path / "packs" / "demo"
    pack.mkdir(parents=True)
    (pack / "solar.md").write_text("# Solar\n\nSolar panels make direct current.\n")
    (pack / "wind.md").write_text("# Wind\n\nWind turbines spin in the breeze.\n")
    (pack / "batteries.md").write_text("# Batteries\n\nA battery bank stores the current.\n")
    golden = tmp_path / "golden.yaml"
    golden.write_text(
        "pack: demo\nqueries:\n"
        "  - {id: d1, query: solar panels, category: keyword, expected: [solar.md]}\n"
        "  - {id: d2, query: stores current, category: natural, expected: [batteries.md]}\n"
        "  - {id: d3, query: turbines in the breeze, category: natural, expected: [wind.md]}\n"
        "  - {id: n1, query: best pizza dough, category: refusal, expected: []}\n"
    )
    return golden, tmp_path / "packs"


def _eval(golden: Path, packs: Path, work: Path, *extra: str) -> list[dict[str, object]]:
    args = ["eval", "--golden", str(golden), "--packs-root", str(packs), "--split", "all"]
    args += ["--provider", "hashing", "--work", str(work), "--no-save", "--json", *extra]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    reports: list[dict[str, object]] = json.loads(out.output)
    return reports


def test_eval_on_the_postgres_engine_reports_what_sqlite_does(
    tmp_path: Path, postgres_database: Callable[[], str]
) -> None:
    golden, packs = _golden(tmp_path)
    dsn = postgres_database()
    sqlite = _eval(golden, packs, tmp_path / "work")
    served = _eval(golden, packs, tmp_path / "work", "--engine", "postgres", "--dsn", dsn)
    assert served == sqlite
    assert sqlite[0]["overall"]["queries"] == 4  # type: ignore[index]
    again = _eval(golden, packs, tmp_path / "work", "--dsn", dsn)  # loaded already: reused
    assert again == sqlite


def test_eval_engine_flags_that_cannot_work_are_one_usage_line(tmp_path: Path) -> None:
    golden, packs = _golden(tmp_path)
    base = ["eval", "--golden", str(golden), "--packs-root", str(packs), "--provider", "hashing"]
    base += ["--work", str(tmp_path / "work"), "--no-save"]
    for extra, said in (
        (["--engine", "sqlite", "--dsn", "host=127.0.0.1"], "use it with --engine postgres"),
        (["--engine", "postgres"], "--engine postgres needs a server: give --dsn"),
    ):
        out = CliRunner().invoke(main, [*base, *extra])
        assert out.exit_code == 2 and said in out.output, out.output
        assert "Traceback" not in out.output


def test_eval_merged_on_the_postgres_engine_reports_what_sqlite_does(
    tmp_path: Path, postgres_database: Callable[[], str]
) -> None:
    golden, packs = _golden(tmp_path)
    dsn = postgres_database()
    sqlite = _eval(golden, packs, tmp_path / "work", "--merged")
    served = _eval(golden, packs, tmp_path / "work", "--merged", "--dsn", dsn)
    assert served == sqlite and sqlite[0]["merged"]["queries"] == 4  # type: ignore[index]
