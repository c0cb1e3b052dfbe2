"""`ep-mcp index PACK --out DIR` writes a versioned artifact; `--check` verifies it."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from ep_mcp.cli import main
from ep_mcp.index import artifact
from ep_mcp.index.artifact import ArtifactError
from ep_mcp.library.publish import Published, check_location
from ep_mcp.packs.reading import find_document


def _cli(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_publish_writes_manifest_index_and_snapshot_behind_a_current_link(
    garden: Path, tmp_path: Path, publish_to: Callable[..., Published]
) -> None:
    done = publish_to(garden, tmp_path / "out")
    folder = tmp_path / "out" / "garden"
    assert os.readlink(folder / "current") == done.version_dir.name
    m = artifact.read_manifest(done.version_dir)
    assert m.slug == "garden" and m.files == 3 and m.chunks >= 2
    assert m.model == "fake/hashing-64" and m.dimension == 64
    assert m.content_hash.startswith("sha256:") and m.built_at.endswith("Z")
    assert (done.version_dir / "pack" / "tomatoes.md").read_bytes() == (
        garden / "tomatoes.md"
    ).read_bytes()
    assert not list(done.version_dir.glob("index.db-*")), "one self-contained database file"
    assert not list(folder.glob(".staging-*"))


def test_publishing_unchanged_content_keeps_the_current_version(
    garden: Path, tmp_path: Path, publish_to: Callable[..., Published]
) -> None:
    first = publish_to(garden, tmp_path / "out")
    again = publish_to(garden, tmp_path / "out")
    assert again.unchanged and again.version_dir == first.version_dir
    forced = publish_to(garden, tmp_path / "out", force=True)
    assert not forced.unchanged and forced.version_dir != first.version_dir


def test_a_change_publishes_a_new_version_and_old_ones_are_pruned(
    garden: Path, tmp_path: Path, publish_to: Callable[..., Published]
) -> None:
    out = tmp_path / "out"
    seen = []
    for i in range(4):
        (garden / "extra.md").write_text(f"# Extra {i}\n\nrevision number {i}\n")
        seen.append(publish_to(garden, out, keep=2).version_dir)
    assert len(set(seen)) == 4
    assert artifact.versions(out / "garden") == seen[-2:]
    assert artifact.current_version(out / "garden") == seen[-1]


def test_check_passes_on_a_sound_artifact_at_every_level(
    garden: Path, tmp_path: Path, publish_to: Callable[..., Published]
) -> None:
    done = publish_to(garden, tmp_path / "out")
    for location in (tmp_path / "out", tmp_path / "out" / "garden", done.version_dir):
        assert [m.version for m in check_location(location)] == [done.version_dir.name]


def _corrupt_index(v: Path) -> None:
    with (v / "index.db").open("r+b") as f:
        f.seek(5000)
        f.write(b"\xff\xfe")


def _truncate_index(v: Path) -> None:
    with (v / "index.db").open("r+b") as f:
        f.truncate(4096)


def _edit_snapshot(v: Path) -> None:
    (v / "pack" / "compost.md").write_text("# changed\n")


def _drop_field(v: Path) -> None:
    data = json.loads((v / "manifest.json").read_text())
    del data["index_sha256"]
    (v / "manifest.json").write_text(json.dumps(data))


def _newer_format(v: Path) -> None:
    data = json.loads((v / "manifest.json").read_text())
    data["artifact_format"] = 99
    (v / "manifest.json").write_text(json.dumps(data))


def _no_manifest(v: Path) -> None:
    (v / "manifest.json").unlink()


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (_corrupt_index, "checksum does not match"),
        (_truncate_index, "bytes, the manifest says"),
        (_edit_snapshot, "pack files differ"),
        (_drop_field, "'index_sha256' is missing"),
        (_newer_format, "newer than this ep-mcp reads"),
        (_no_manifest, "no manifest.json"),
    ],
)
def test_check_fails_with_one_line_naming_the_problem(
    garden: Path,
    tmp_path: Path,
    publish_to: Callable[..., Published],
    damage: Callable[[Path], None],
    expected: str,
) -> None:
    done = publish_to(garden, tmp_path / "out")
    damage(done.version_dir)
    with pytest.raises(ArtifactError, match=expected):
        check_location(done.version_dir)
    code, out, err = _cli("index", "--check", done.version_dir)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and expected in err


def test_check_of_a_folder_without_an_artifact_fails_cleanly(tmp_path: Path) -> None:
    code, _, err = _cli("index", "--check", tmp_path)
    assert code == 1 and "no artifact here" in err


def test_cli_publishes_and_checks_an_artifact(garden: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, stdout, _ = _cli("index", garden, "--out", out, "--provider", "hashing", "--json")
    assert code == 0
    report = json.loads(stdout)
    assert report["pack"] == "garden" and report["unchanged"] is False
    assert report["manifest"]["model"] == "fake/hashing-64"
    code, stdout, _ = _cli("index", "--check", out)
    assert code == 0 and stdout.startswith("ok garden ")
    code, _, err = _cli("index")
    assert code == 2 and "missing argument PACK" in err


def test_serving_an_artifact_needs_only_its_folder(
    garden: Path, tmp_path: Path, publish_to: Callable[..., Published]
) -> None:
    from ep_mcp.config.load import load_settings
    from ep_mcp.library.opening import open_library
    from ep_mcp.retrieval.types import SearchRequest

    publish_to(garden, tmp_path / "out")
    for p in garden.iterdir():
        p.unlink()  # the source pack is gone: the artifact carries its files
    settings = load_settings(
        data={
            "packs": [{"artifact": str(tmp_path / "out" / "garden")}],
            "embedding": {"provider": "hashing"},
        }
    )
    lib = open_library(settings, tmp_path / "home")
    try:
        rt = lib.get()
        assert rt.config.read_only and rt.store.read_only
        hits = rt.search(SearchRequest(query="compost heap aerobic", k=3)).hits
        assert hits and hits[0].source_file == "compost.md"
        assert "Pinch" not in find_document(rt.pack, "tomatoes.md").text
    finally:
        lib.close()


def test_an_artifact_pack_with_nothing_published_is_a_clear_error(tmp_path: Path) -> None:
    from ep_mcp.config.load import load_settings
    from ep_mcp.library.opening import open_library

    settings = load_settings(data={"packs": [{"artifact": str(tmp_path / "none")}]})
    with pytest.raises(ArtifactError, match="nothing is published there yet"):
        open_library(settings, tmp_path / "home", embedder=None)
