"""`ep-mcp bench calibrate`: refit the confidence model on the golden dev split."""

from __future__ import annotations

import time
from pathlib import Path

import click

from ep_mcp.cli.app import (
    bench,
    config_option,
    emit_json,
    fail_cleanly,
    golden_option,
    json_option,
    packs_root_option,
    provider_option,
    resolve_settings,
)
from ep_mcp.cli.eval_cmds import work_option
from ep_mcp.errors import ConfigError


def model_target(out: Path | None, replace: bool, home: Path, stamp: str) -> Path:
    """Where the refitted model goes: ``out`` (an existing file only with ``replace``); with
    no ``out``, a new file under ``home`` — or, with ``replace``, the packaged model."""
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.retrieval.confidence_file import packaged_path

    if out is None:
        return packaged_path() if replace else home / "calibration" / f"confidence-{stamp}.json"
    if out.exists() and not replace:
        raise ConfigError(f"{out} exists — pass --replace to overwrite it, or another --out")
    return out


@bench.command("calibrate")
@golden_option
@packs_root_option
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Where to write the model: a new file (default: a new "
    "$EP_MCP_HOME/calibration/confidence-<time>.json; the served model is not touched).",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Overwrite --out if it exists; without --out, replace the packaged model that "
    "ep-mcp serves (ep_mcp/data/confidence.json).",
)
@click.option("--plots", "plots_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--beir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="A BEIR folder (e.g. ../shared/bench/scifact): its train queries, all answerable, "
    "also bound the floor (≤ 5 % withheld); its test queries are reported.",
)
@config_option
@provider_option
@work_option
@json_option
@fail_cleanly
def calibrate_cmd(
    golden: Path,
    roots: tuple[Path, ...],
    out: Path | None,
    replace: bool,
    plots_dir: Path | None,
    beir: Path | None,
    config: Path | None,
    provider: str | None,
    work: Path | None,
    as_json: bool,
) -> None:
    """Fit `confidence` and `answerable` on the dev split; print ECE and the operating point
    (the `min_answerable` chosen on dev) for dev and test."""
    # start-up: a command's code is imported when it runs (`ep-mcp --help` stays fast)
    from ep_mcp.eval import calibrate as cal
    from ep_mcp.eval.golden import load_golden, load_golden_dir
    from ep_mcp.eval.svg import reliability
    from ep_mcp.retrieval.confidence_file import packaged_path, save_model

    settings = resolve_settings(config, provider=provider)
    assert settings.home is not None
    target = model_target(out, replace, settings.home, time.strftime("%Y%m%d-%H%M%S"))
    sets = load_golden_dir(golden) if golden.is_dir() else [load_golden(golden)]
    folder = work or settings.home / "eval"
    rows = cal.collect(sets, list(roots), settings, folder)
    other = cal.collect_beir(beir, settings, folder) if beir is not None else []
    dev = [r for r in rows if r.split == "dev"]
    model = cal.fit_model(dev, settings.retrieval.activation_model, note="golden dev split")
    target.parent.mkdir(parents=True, exist_ok=True)
    save_model(model, target)
    chosen = cal.choose_min_answerable(dev, model, also=[r for r in other if r.split == "dev"])
    report: dict[str, object] = {"min_answerable": chosen.min_answerable}
    for split in ("dev", "test"):
        part = [r for r in other if r.split == split]
        if part:
            point = cal.operating_point(part, model, chosen.min_answerable)
            hit_ece = round(cal.hit_calibration(part, model).ece, 4)
            report[f"beir_{split}"] = {"hit_ece": hit_ece, **point.to_dict()}
    for split in ("dev", "test"):
        part = [r for r in rows if r.split == split]
        hits, answers = cal.hit_calibration(part, model), cal.answer_calibration(part, model)
        point = cal.operating_point(part, model, chosen.min_answerable)
        report[split] = {
            "hit_ece": round(hits.ece, 4),
            "answerable_ece": round(answers.ece, 4),
            **point.to_dict(),
        }
        if plots_dir is not None:
            plots_dir.mkdir(parents=True, exist_ok=True)
            for name, c in (("hits", hits), ("answerable", answers)):
                title = f"{name} confidence, {split} (ECE {c.ece:.3f}, n={c.n})"
                path = plots_dir / f"confidence-{name}-{split}.svg"
                path.write_text(reliability(title, c.bins), encoding="utf-8")
    if as_json:
        emit_json(report)
        return
    served = (
        "it is the model ep-mcp serves"
        if target == packaged_path()
        else ("the served model is unchanged (rerun with --replace and no --out to replace it)")
    )
    click.echo(f"model written: {target} — {served}", err=True)
    click.echo(f"min_answerable (chosen on dev): {chosen.min_answerable}")
    for split in ("dev", "test"):
        click.echo(f"{split}: {report[split]}")
    for split, told in (("dev", "train (bounds the floor)"), ("test", "test")):
        if f"beir_{split}" in report:
            click.echo(f"{beir.name if beir else 'beir'} {told}: {report[f'beir_{split}']}")
