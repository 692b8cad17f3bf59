#!/usr/bin/env bash
# Whole tree: every module of Debian's ceph-osd and openjdk-17-jre-headless with their
# -dbg packages (46 modules, about 2 GB of DWARF inflated), as a CI job or a symbol
# scraper dumps a distribution. dumpsyms is given the tree with --store and
# --debug-dir; Mozilla's dump_syms, which takes one file, is run one process per core
# (`xargs -P $(nproc)`), each process given a module's debug file found by build ID
# (the module itself where the package has none).
#
#   bench/tree.sh fetch            # download and unpack into $BENCH_DIR/tree (network)
#   bench/tree.sh [RUNS]           # measure, default and --inlines; median of RUNS (3)
#
# Printed: wall, CPU (user+sys of every process) and peak RSS (the largest process) of
# each, and our ratios to Mozilla's. Not run by CI (300 MB of packages).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${BENCH_DIR:-$root/target/bench}
tree=$work/tree

if [ "${1:-}" = fetch ]; then
    mkdir -p "$tree" "$work/tree-debs"
    rm -f "$tree/.complete"
    cd "$work/tree-debs"
    # One package at a time: a mirror that no longer serves one (ceph-osd-dbg answered
    # 404 on 2026-11-27) leaves the others unpacked, and the run names what is missing.
    missing=()
    for pkg in ceph-osd ceph-osd-dbg openjdk-17-jre-headless openjdk-17-dbg; do
        apt-get download "$pkg" || missing+=("$pkg")
    done
    for deb in *.deb; do [ ! -e "$deb" ] || dpkg-deb -x "$deb" "$tree"; done
    cd "$work" && rm -rf "$work/tree-debs"
    if [ ${#missing[@]} -gt 0 ]; then
        echo "tree.sh: could not download ${missing[*]}; the tree is incomplete and its" \
            "figures are not comparable with docs/PERFORMANCE.md's" >&2
        exit 1
    fi
    touch "$tree/.complete" # every package unpacked: the tree docs/PERFORMANCE.md measures
    exit 0
fi
runs=${1:-3}
[ -d "$tree/usr" ] || { echo "no tree: run bench/tree.sh fetch" >&2; exit 1; }
[ -e "$tree/.complete" ] || echo "tree.sh: the tree is incomplete (bench/tree.sh fetch names" \
    "what it could not download): its figures are not comparable with docs/PERFORMANCE.md's" >&2
cd "$root"
cargo build --release --locked --quiet
ours=$root/target/release/dumpsyms
moz=${MOZ_DUMP_SYMS:-$work/moz/bin/dump_syms}
[ -x "$moz" ] || { echo "Mozilla's dump_syms is not installed: run bench/run.sh fetch" >&2; exit 1; }

# The modules: ELF files outside usr/lib/debug; for Mozilla, each one's debug file.
list=$(mktemp)
out=$(mktemp -d)
trap 'rm -rf "$list" "$out"' EXIT
while IFS= read -r f; do
    [ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = 177ELF ] || continue
    id=$(readelf -n "$f" 2>/dev/null | awk '/Build ID/ {print $3}')
    debug=$tree/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
    [ -n "$id" ] && [ -e "$debug" ] && echo "$debug" || echo "$f"
done < <(find "$tree" -path "$tree/usr/lib/debug" -prune -o -type f -print | sort) >"$list"
echo "$(wc -l <"$list") modules, $(grep -c /usr/lib/debug/ "$list") with a debug file" >&2

measure() { # prints "wall cpu rss_mib"; a module that fails still counts its time
    local t
    t=$( (/usr/bin/time -f "%e %U %S %M" "$@" 2>&1 >/dev/null || true) | tail -1)
    awk -v o="$t" 'BEGIN { split(o, f, " "); printf "%.2f %.2f %.0f\n", f[1], f[2] + f[3], f[4] / 1024 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
printf '| tree | flags | tool | wall s | CPU s | peak RSS MiB | wall vs Mozilla | CPU vs Mozilla |\n'
printf '| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n'
for flags in "" "--inlines"; do
    wo=() co=() mo=() wm=() cm=() mm=()
    for _ in $(seq "$runs"); do
        rm -rf "$out/ours"
        read -r a b c < <(measure "$ours" -q $flags --store "$out/ours" \
            --debug-dir "$tree/usr/lib/debug" "$tree")
        wo+=("$a"); co+=("$b"); mo+=("$c")
        rm -rf "$out/moz" && mkdir -p "$out/moz"
        # A module Mozilla cannot dump costs what it cost; the run goes on.
        read -r a b c < <(measure xargs -P "$(nproc)" -a "$list" -n 1 sh -c \
            'exec "$0" '"$flags"' "$1" >"'"$out/moz"'/$(basename "$1").sym" 2>/dev/null' "$moz")
        wm+=("$a"); cm+=("$b"); mm+=("$c")
    done
    W=$(printf '%s\n' "${wo[@]}" | median); C=$(printf '%s\n' "${co[@]}" | median)
    M=$(printf '%s\n' "${mo[@]}" | median)
    Wm=$(printf '%s\n' "${wm[@]}" | median); Cm=$(printf '%s\n' "${cm[@]}" | median)
    Mm=$(printf '%s\n' "${mm[@]}" | median)
    printf '| ceph-osd + openjdk 17 | %s | dumpsyms --store | %s | %s | %s | %.2f | %.2f |\n' \
        "${flags:-default}" "$W" "$C" "$M" "$(awk "BEGIN { print $W / $Wm }")" "$(awk "BEGIN { print $C / $Cm }")"
    printf '| ceph-osd + openjdk 17 | %s | Mozilla dump_syms, xargs -P %s | %s | %s | %s |  |  |\n' \
        "${flags:-default}" "$(nproc)" "$Wm" "$Cm" "$Mm"
done
echo
echo "$(date -u +%Y-%m-%d), $(nproc) cores, median of $runs runs; $(wc -l <"$list") modules"
