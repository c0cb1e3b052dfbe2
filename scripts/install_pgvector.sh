#!/usr/bin/env bash
# PostgreSQL 15 with pgvector, in a folder of its own, for the PostgreSQL tests (tests/postgres_server.py).
#
#   scripts/install_pgvector.sh PREFIX
#
# On Debian 12 (bookworm has no pgvector package): installs postgresql-server-dev-15 with apt, fetches
# pgvector's *source* package from Debian trixie through a private apt list (the system's sources are not
# touched; apt checks the signatures), builds it against PostgreSQL 15 and installs it into a relocatable copy
# of the system's PostgreSQL 15 under PREFIX, so the system PostgreSQL is left as it was. Prints the bin folder
# (set EP_PG_BIN to it) as the last line and exits 0; exits non-zero with a one-line reason otherwise.
# A PREFIX that already holds a finished build (owned by this user, not writable by others) is reused.
set -euo pipefail
prefix="${1:?usage: scripts/install_pgvector.sh PREFIX (a folder for PostgreSQL 15 + pgvector)}"
pg=15
bindir="$prefix/usr/lib/postgresql/$pg/bin"
done_mark="$prefix/.ep-mcp-pgvector"

fail() { echo "install_pgvector: $*" >&2; exit 1; }

if [ -f "$done_mark" ] && [ -O "$prefix" ] && [ -z "$(find "$prefix" -maxdepth 0 -perm /022)" ]; then
  echo "install_pgvector: reusing $(cat "$done_mark") in $prefix" >&2
  echo "$bindir"
  exit 0
fi
[ -e "$prefix" ] && fail "$prefix exists but is not a finished build: remove it first"
command -v apt-get >/dev/null 2>&1 || fail "no apt-get: this route needs Debian 12 (or use: pip install pgserver)"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || fail "not root and no sudo: apt-get cannot install postgresql-server-dev-$pg"
  sudo="sudo -n"
fi
apt=(apt-get -qq -o DPkg::Lock::Timeout=300)
export DEBIAN_FRONTEND=noninteractive

echo "install_pgvector: apt-get install postgresql-server-dev-$pg" >&2
$sudo "${apt[@]}" update >/dev/null || fail "apt-get update failed"
$sudo "${apt[@]}" install -y "postgresql-$pg" "postgresql-server-dev-$pg" make gcc >/dev/null \
  || fail "apt-get install postgresql-server-dev-$pg failed"
sys_bin="/usr/lib/postgresql/$pg/bin"
[ -x "$sys_bin/pg_config" ] || fail "$sys_bin/pg_config is missing after the install"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# a private apt configuration that only knows trixie's source packages
mkdir -p "$scratch/apt/lists/partial" "$scratch/apt/parts" "$scratch/src"
echo "deb-src http://deb.debian.org/debian trixie main" > "$scratch/apt/sources.list"
private=(-o "Dir::Etc::SourceList=$scratch/apt/sources.list" -o "Dir::Etc::SourceParts=$scratch/apt/parts"
  -o "Dir::State::Lists=$scratch/apt/lists")
echo "install_pgvector: pgvector source package from Debian trixie" >&2
"${apt[@]}" "${private[@]}" update >/dev/null 2>&1 || fail "apt-get update of trixie's deb-src list failed"
(cd "$scratch/src" && "${apt[@]}" "${private[@]}" source --download-only pgvector >/dev/null 2>&1) \
  || fail "apt-get source pgvector (trixie) failed"
orig="$(find "$scratch/src" -maxdepth 1 -name 'pgvector_*.orig.tar.*' | head -1)"
[ -n "$orig" ] || fail "no pgvector_*.orig.tar.* in the downloaded source package"
version="$(basename "$orig" | sed -E 's/^pgvector_([^.]+\.[^.]+\.[^.]+)\.orig.*/\1/')"
mkdir "$scratch/build"
tar -xf "$orig" -C "$scratch/build" --strip-components=1

echo "install_pgvector: building pgvector $version against PostgreSQL $pg" >&2
stage="$prefix.partial.$$"
rm -rf "$stage"
mkdir -p "$stage/usr/lib/postgresql" "$stage/usr/share/postgresql"
cp -a "/usr/lib/postgresql/$pg" "$stage/usr/lib/postgresql/"
cp -a "/usr/share/postgresql/$pg" "$stage/usr/share/postgresql/"
make -s -C "$scratch/build" -j2 PG_CONFIG="$sys_bin/pg_config" >/dev/null 2>&1 || fail "make (pgvector) failed"
make -s -C "$scratch/build" install PG_CONFIG="$sys_bin/pg_config" DESTDIR="$stage" >/dev/null 2>&1 \
  || fail "make install (pgvector) failed"
[ -f "$stage/usr/share/postgresql/$pg/extension/vector.control" ] || fail "vector.control was not installed"
# the copy finds its share and lib folders relative to its own bin folder
[ "$("$stage/usr/lib/postgresql/$pg/bin/pg_config" --sharedir)" = "$stage/usr/share/postgresql/$pg" ] \
  || fail "the copy of PostgreSQL $pg is not relocatable (pg_config --sharedir points elsewhere)"
echo "PostgreSQL $("$sys_bin/pg_config" --version | awk '{print $2}') + pgvector $version" > "$stage/.ep-mcp-pgvector"
chmod -R go-w "$stage"
chmod 755 "$stage"
mv "$stage" "$prefix"
echo "install_pgvector: $(cat "$done_mark") in $prefix" >&2
echo "$bindir"
