"""Sanity check for the golden sets: paths exist, no navigation files, valid categories and
splits, the first batch (ids numbered below 100) split by the documented rule, and every pack
with at least 40 test queries of which at least 8 are negatives (its own refusals included).

Usage: .venv/bin/python tests/golden/check_golden.py [PACKS_ROOT] [SKILLS_ROOT]
"""

import collections
import os
import pathlib
import re
import sys

import yaml

from ep_mcp.eval.golden import load_golden, load_refusals, stratified_split

HERE = pathlib.Path(__file__).resolve().parent
SHARED = pathlib.Path(
    os.environ.get("EP_MCP_SHARED") or pathlib.Path(__file__).resolve().parents[3] / "shared"
)
PACKS = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else SHARED / "packs"
SKILLS = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else SHARED / "skills"
CATS = {"keyword", "natural", "paraphrase", "multi-file", "negative"}
SKILL_REPOS = {"anthropics-skills", "obra-superpowers"}
SPLITS = {"dev", "test"}
MIN_TEST, MIN_TEST_NEGATIVES = 40, 8


def is_navigation(p: pathlib.Path) -> bool:
    if p.name in ("_index.md", "source-coverage.md"):
        return True
    text = p.read_text(encoding="utf-8")
    m = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    if not m:
        return False
    fm = yaml.safe_load(m.group(1)) or {}
    return (
        str(fm.get("retrieval_strategy", "")).strip() in ("navigation", "on_demand")
        or str(fm.get("concept_scope", "")).strip() == "navigation"
    )


errors = []
grand = collections.Counter()
for f in sorted(HERE.glob("*.yaml")):
    doc = yaml.safe_load(f.read_text())
    pack = doc["pack"]
    root = (SKILLS if pack in SKILL_REPOS else PACKS) / pack
    if not root.is_dir():
        errors.append(f"{f.name}: pack root {root} missing")
        continue
    counts = collections.Counter()
    ids = set()
    for q in doc["queries"]:
        qid = q["id"]
        if qid in ids:
            errors.append(f"{f.name}:{qid}: duplicate id")
        ids.add(qid)
        cat = q["category"]
        counts[cat] += 1
        if q.get("split") not in SPLITS:
            errors.append(f"{f.name}:{qid}: split must be one of {sorted(SPLITS)}")
        if cat not in CATS:
            errors.append(f"{f.name}:{qid}: bad category {cat}")
        exp = q.get("expected") or []
        if (cat == "negative") != (len(exp) == 0):
            errors.append(f"{f.name}:{qid}: negative <=> expected empty violated")
        if cat == "multi-file" and not 2 <= len(exp) <= 3:
            errors.append(f"{f.name}:{qid}: multi-file needs 2-3 expected")
        for p in exp + (q.get("must_not") or []):
            fp = root / p
            if not fp.is_file():
                errors.append(f"{f.name}:{qid}: missing path {p}")
        for p in exp:
            fp = root / p
            if fp.is_file() and is_navigation(fp):
                errors.append(f"{f.name}:{qid}: navigation file as expected: {p}")
            if pack in SKILL_REPOS and not p.endswith("/SKILL.md"):
                errors.append(f"{f.name}:{qid}: skills expected must be a SKILL.md: {p}")
            if pack in SKILL_REPOS and p.startswith("template/"):
                errors.append(f"{f.name}:{qid}: template skill is not a valid answer")
    grand.update(counts)
    golden = load_golden(f)
    first = [q for q in golden.queries if int(q.id.rsplit("-", 1)[1]) < 100]
    for qid, split in stratified_split(first).items():
        if next(q.split for q in first if q.id == qid) != split:
            errors.append(f"{f.name}:{qid}: the split rule puts this first-batch query in {split}")
    refusals = load_refusals(root, golden.refusals) if golden.refusals else ()
    test = [q for q in golden.queries if q.split == "test"] + list(refusals)
    test_neg = sum(1 for q in test if q.negative)
    if len(test) < MIN_TEST or test_neg < MIN_TEST_NEGATIVES:
        errors.append(
            f"{f.name}: {len(test)} test queries ({test_neg} negatives); "
            f"want >= {MIN_TEST} ({MIN_TEST_NEGATIVES})"
        )
    dev = [q for q in golden.queries if q.split == "dev"]
    print(
        f"{f.name:26s} total={sum(counts.values()):3d} "
        + " ".join(f"{c}={counts[c]}" for c in sorted(CATS))
        + f" | dev={len(dev)} (neg {sum(q.negative for q in dev)})"
        + f" test={len(test)} (neg {test_neg}, refusals {len(refusals)})"
    )
print(
    f"{'ALL':26s} total={sum(grand.values()):3d} "
    + " ".join(f"{c}={grand[c]}" for c in sorted(CATS))
)
if errors:
    print("\nERRORS:")
    print("\n".join(errors))
    sys.exit(1)
print("OK: all paths exist, none is a navigation file, splits follow the rule and the minimums")
