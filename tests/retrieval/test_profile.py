from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from ep_mcp.packs.loader import load_pack
from ep_mcp.retrieval import profile
from ep_mcp.retrieval.candidates import Candidate
from ep_mcp.retrieval.profile import apply_profile, profile_similarities
from ep_mcp.retrieval.view import pack_view


def vec(*xs: float) -> np.ndarray:
    return np.asarray(xs, dtype=np.float32)


def test_a_chunk_in_a_file_about_the_question_overtakes_the_same_words_in_a_hub_page() -> None:
    hub = Candidate(1, "glossary.md", score=0.80)
    page = Candidate(2, "concepts/panels.md", score=0.75)
    sims = {"glossary.md": 0.10, "concepts/panels.md": 0.60}
    out = apply_profile([hub, page], sims, weight=0.5, scale=1.0)
    assert [c.path for c in out] == ["concepts/panels.md", "glossary.md"]
    assert out[0].score == pytest.approx(0.75 + 0.5 * 0.60)
    assert any("file profile" in n for n in out[0].notes)


def test_the_bonus_scales_with_the_fusion_range_and_never_goes_negative() -> None:
    a = Candidate(1, "a.md", score=0.03)
    b = Candidate(2, "b.md", score=0.02)
    out = apply_profile([a, b], {"a.md": -0.4, "b.md": 0.5}, weight=1.0, scale=0.03)
    scores = {c.path: c.score for c in out}
    assert scores["a.md"] == pytest.approx(0.03)
    assert scores["b.md"] == pytest.approx(0.02 + 0.03 * 0.5)


def test_files_without_a_profile_and_a_zero_weight_leave_candidates_alone() -> None:
    c = Candidate(1, "x.md", score=0.5)
    assert apply_profile([c], {}, weight=1.0, scale=1.0) == [c]
    assert apply_profile([c], {"x.md": 0.9}, weight=0.0, scale=1.0) == [c]


def test_similarity_is_the_cosine_of_the_query_to_each_distinct_profile() -> None:
    calls: list[str] = []

    def embed(text: str) -> np.ndarray:
        calls.append(text)
        return vec(1, 0) if text == "Panels" else vec(0, 3)

    sims = profile_similarities(
        ["a.md", "a.md", "b.md", "c.md"],
        {"a.md": "Panels", "b.md": "Glossary"},
        vec(2, 0),
        embed,
    )
    assert sims == pytest.approx({"a.md": 1.0, "b.md": 0.0})
    assert calls == ["Panels", "Glossary"]  # once per file; no profile, no embedding


def test_every_file_of_a_skill_is_profiled_by_the_skills_name_and_description(
    make_pack: Callable[[dict[str, str]], Path],
) -> None:
    root = make_pack(
        {
            "skills/worktrees/SKILL.md": (
                "---\nname: using-git-worktrees\ndescription: Use when starting feature work "
                "that needs isolation\n---\n# Worktrees\n\nBody.\n"
            ),
            "skills/worktrees/notes.md": "# Notes\n\nMore.\n",
            "README.md": "# Superpowers\n\nA skills library.\n",
        }
    )
    view = pack_view(load_pack(root.resolve(), kind="skills", slug="sp", max_file_bytes=1 << 20))
    line = "using-git-worktrees: Use when starting feature work that needs isolation"
    assert view.profiles["skills/worktrees/SKILL.md"] == line
    assert view.profiles["skills/worktrees/notes.md"] == line
    assert "README.md" not in view.profiles  # no frontmatter: its heading is in its own text


def test_a_pack_file_is_profiled_by_its_declared_title_and_description_only(
    make_pack: Callable[[dict[str, str]], Path],
) -> None:
    root = make_pack(
        {
            "a.md": "---\ntitle: Custom Panels\n---\n# Custom Panels\n\nText.\n",
            "b.md": "---\ntitle: Glossary\ndescription: Terms A to Z\n---\n# Glossary\n\nT.\n",
            "c.md": "# Only A Heading\n\nText.\n",
        }
    )
    view = pack_view(load_pack(root.resolve(), slug="p", max_file_bytes=1 << 20))
    assert view.profiles["a.md"] == "Custom Panels"
    assert view.profiles["b.md"] == "Glossary: Terms A to Z"
    assert "c.md" not in view.profiles


def test_profile_similarity_is_a_cosine_whatever_the_vectors_lengths() -> None:
    query = np.array([0.3, 0.4], dtype=np.float32)  # length 0.5
    sims = profile_similarities(
        ["a.md"], {"a.md": "A"}, query, lambda text: np.array([0.6, 0.8], dtype=np.float32) * 0.5
    )
    assert sims == {"a.md": pytest.approx(1.0)}


def test_a_profile_vector_is_normalised_once_and_the_same_unit_is_handed_back() -> None:
    v = vec(3.0, 4.0)
    first = profile._unit_once(v)
    assert np.allclose(first, [0.6, 0.8])
    assert profile._unit_once(v) is first  # remembered: not computed again


def test_a_remembered_unit_of_another_vector_under_the_same_id_is_not_handed_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    v = vec(3.0, 4.0)
    # what a vector freed and replaced at the same address would leave behind
    monkeypatch.setattr(profile, "_UNITS", {id(v): (vec(1.0, 0.0), vec(1.0, 0.0))})
    assert np.allclose(profile._unit_once(v), [0.6, 0.8])


def test_the_remembered_units_stay_within_their_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profile, "MAX_UNITS", 3)
    monkeypatch.setattr(profile, "_UNITS", {})
    kept = [vec(float(i), 1.0) for i in range(10)]  # alive: no id is reused
    for v in kept:
        profile._unit_once(v)
        assert len(profile._UNITS) <= 3


def test_a_zero_vector_has_no_direction_and_a_cosine_of_zero() -> None:
    # an embedder may give a text with no tokens the zero vector: no NaN reaches the scores
    zero, x = vec(0.0, 0.0), vec(3.0, 4.0)
    sims = profile_similarities(["a.md"], {"a.md": "a"}, zero, lambda _t: x)
    assert sims == {"a.md": 0.0}
    sims = profile_similarities(["a.md"], {"a.md": "a"}, x, lambda _t: vec(0.0, 0.0))
    assert sims == {"a.md": 0.0}
