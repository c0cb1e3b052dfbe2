#!/usr/bin/env bash
# Mutation testing of the ranking stages (src/ep_mcp/retrieval/ and src/ep_mcp/hub/ranking.py)
# against their fast tests (tests/retrieval/, tests/hub/test_ranking.py; hashing embedder).
# Configuration: [tool.mutmut] in pyproject.toml. Takes ~30 min on 2 cores; not part of .ci/run.
#   scripts/mutation.sh            # run, then print the kill rate and the survivors
#   MUTMUT_CHILDREN=4 scripts/mutation.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${VIRTUAL_ENV:-.venv}/bin"
rm -rf mutants
"$bin/mutmut" run --max-children "${MUTMUT_CHILDREN:-2}" || true
"$bin/mutmut" results --all true > mutants/results.txt || true
python3 - mutants/results.txt <<'PY'
import collections, sys
rows = [l.strip().rsplit(": ", 1) for l in open(sys.argv[1]) if ": " in l]
count = collections.Counter(status for _, status in rows)
killed = count["killed"] + count["timeout"]
total = sum(count.values()) - count["skipped"] - count["not checked"]
print(dict(count))
print(f"kill rate: {killed}/{total} = {killed / max(total, 1):.1%}")
for name, status in rows:
    if status == "survived":
        print("survived:", name)
PY
