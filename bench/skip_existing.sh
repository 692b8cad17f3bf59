#!/usr/bin/env bash
# `--skip-existing` asking the server: a tree whose modules are all on the server should
# cost a small part of dumping it (target: at most 5% of the CPU). The tree is
# bench/tree.sh's (ceph-osd + openjdk 17 with their -dbg packages), else bench/run.sh's
# ceph-osd. Its store, dumped once, is served over HTTP by Python's http.server (a
# static store, which answers HEAD as Tecken's download API does); a run into an empty
# store with --skip-existing --symbols-url then asks it for each module.
#
#   bench/skip_existing.sh          # prints the CPU and wall of both runs, and the ratio
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${BENCH_DIR:-$root/target/bench}
tree=$work/tree
[ -d "$tree/usr" ] || tree=$work/ceph
[ -d "$tree/usr" ] || { echo "no tree: run bench/tree.sh fetch (or bench/run.sh fetch)" >&2; exit 1; }
cd "$root"
cargo build --release --locked --quiet
ours=$root/target/release/dumpsyms
out=$(mktemp -d)
server_pid=
trap '[ -z "$server_pid" ] || kill "$server_pid"; rm -rf "$out"' EXIT

measure() { # prints "wall cpu"
    local t
    t=$( (/usr/bin/time -f "%e %U %S" "$@" 2>&1 >/dev/null) | tail -1)
    awk -v o="$t" 'BEGIN { split(o, f, " "); printf "%.2f %.2f\n", f[1], f[2] + f[3] }'
}
read -r dump_wall dump_cpu < <(measure "$ours" -q --store "$out/served" \
    --debug-dir "$tree/usr/lib/debug" "$tree")
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$out/served" >"$out/http.log" 2>&1 &
server_pid=$!
for _ in $(seq 50); do
    curl -s -o /dev/null "http://127.0.0.1:$port/" && break
    sleep 0.1
done
read -r skip_wall skip_cpu < <(measure "$ours" --store "$out/empty" --skip-existing \
    --symbols-url "http://127.0.0.1:$port" --debug-dir "$tree/usr/lib/debug" "$tree")
modules=$(find "$out/served" -name '*.sym' | wc -l)
written=$( (find "$out/empty" -name "*.sym" 2>/dev/null || true) | wc -l)
asked=$(grep -c '"HEAD ' "$out/http.log" || true)
printf '| run | wall s | CPU s |\n| --- | ---: | ---: |\n'
printf '| dump the tree into a store | %s | %s |\n' "$dump_wall" "$dump_cpu"
printf '| --skip-existing, every module on the server | %s | %s |\n' "$skip_wall" "$skip_cpu"
echo
echo "$modules modules served, $asked HEAD requests, $written dumped again;" \
    "CPU ratio $(awk "BEGIN { printf \"%.3f\", $skip_cpu / $dump_cpu }")" \
    "($(date -u +%Y-%m-%d), $(nproc) cores)"
