# scratch.sh - sourced by doc-commands.sh and doc-figures.sh: a scratch copy of the repository
# SOURCE_DIR ($1) with TPSIM_BINARY ($2) as build/tpsim and ../shared beside it, removed on exit;
# sets src, bin, limit ($3, default 300), tmp, and changes into the copy.
src=$(cd "$1" && pwd)
bin=$(readlink -f "$2")
limit=${3:-300}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tpsim-doc-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/repo/build"
tar -C "$src" --exclude='./build*' --exclude=./.git --exclude=./out -cf - . | tar -C "$tmp/repo" -xf -
ln -s "$bin" "$tmp/repo/build/tpsim"
[ -d "$src/../shared" ] && ln -s "$(cd "$src/../shared" && pwd)" "$tmp/shared"
cd "$tmp/repo"
