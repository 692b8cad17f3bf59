#!/usr/bin/env bash
# A store run over an archive of bench/tree.sh's tree (ceph-osd + openjdk 17 with their
# -dbg packages, unpacked) against the same run over the unpacked tree with its
# usr/lib/debug as --debug-dir: the archive is a .zip (`zip -1`) and a .tar.zst
# (`zstd -3`), made once under $BENCH_DIR. Runs are paired (tree, archive, tree,
# archive, ...) so that the ratio holds on a machine whose speed drifts; the median of
# RUNS pairs is printed, with the peak RSS of each. The stores must be identical.
#
#   bench/archives.sh [RUNS]     # default 5; needs `bench/tree.sh fetch` first
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${BENCH_DIR:-$root/target/bench}
tree=$work/tree
runs=${1:-5}
[ -d "$tree/usr" ] || { echo "no tree: run bench/tree.sh fetch" >&2; exit 1; }
command -v zip >/dev/null && command -v zstd >/dev/null ||
    { echo "needs zip and zstd to make the archives" >&2; exit 1; }
cd "$root"
cargo build --release --locked --quiet
ours=$root/target/release/dumpsyms
[ -e "$work/tree.zip" ] || (cd "$tree" && zip -qr -1 "$work/tree.zip" .)
[ -e "$work/tree.tar.zst" ] || tar -C "$tree" -cf - . | zstd -q -3 -T0 >"$work/tree.tar.zst"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

measure() { # prints "wall rss_mib"
    local t
    t=$( (/usr/bin/time -f "%e %M" "$@" 2>&1 >/dev/null || true) | tail -1)
    awk -v o="$t" 'BEGIN { split(o, f, " "); printf "%.2f %.0f\n", f[1], f[2] / 1024 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
printf '| archive | size MB | tree wall s | archive wall s | ratio (median of pairs) | tree RSS MiB | archive RSS MiB |\n'
printf '| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n'
for archive in tree.zip tree.tar.zst; do
    ratios=() tw=() aw=() tr=() ar=()
    for _ in $(seq "$runs"); do
        rm -rf "$out/tree" "$out/archive"
        read -r w r < <(measure "$ours" -q --store "$out/tree" --debug-dir "$tree/usr/lib/debug" "$tree")
        tw+=("$w"); tr+=("$r")
        read -r w2 r2 < <(measure "$ours" -q --store "$out/archive" "$work/$archive")
        aw+=("$w2"); ar+=("$r2")
        ratios+=("$(awk "BEGIN { print $w2 / $w }")")
        diff -r "$out/tree" "$out/archive" >/dev/null ||
            { echo "$archive: the stores differ" >&2; exit 1; }
    done
    printf '| %s | %d | %s | %s | %.2f | %s | %s |\n' "$archive" \
        "$(($(stat -c %s "$work/$archive") / 1000000))" \
        "$(printf '%s\n' "${tw[@]}" | median)" "$(printf '%s\n' "${aw[@]}" | median)" \
        "$(printf '%s\n' "${ratios[@]}" | median)" \
        "$(printf '%s\n' "${tr[@]}" | median)" "$(printf '%s\n' "${ar[@]}" | median)"
done
echo
echo "$(date -u +%Y-%m-%d), $(nproc) cores, median of $runs pairs"
