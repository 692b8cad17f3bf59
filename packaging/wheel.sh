#!/usr/bin/env bash
# The Python wheel, built and checked as a user meets it:
#   1. maturin (from PyPI) builds it from pyproject.toml (the dist profile);
#   2. auditwheel shows which manylinux policy its binary meets, and the wheel's tag
#      must be that policy: every versioned symbol it needs from libstdc++, libgcc_s,
#      libm and libc is inside it;
#   3. pip installs it into a fresh virtual environment, and that environment's
#      dumpsyms must write the same bytes as the cargo-built binary on fixtures of
#      each format (ELF with --inlines, Swift names through the helper process, a PE
#      with its PDB, a Mach-O), and print the same --version, completions and man page.
#
#   packaging/wheel.sh [CARGO_BUILT_DUMPSYMS]    (default: target/release/dumpsyms)
#
# The wheel is left in target/wheels/ (WHEEL_DIR to change).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
reference=$(readlink -f "${1:-$root/target/release/dumpsyms}")
out=${WHEEL_DIR:-$root/target/wheels}
python=${PYTHON:-python3}
[ -x "$reference" ] || { echo "wheel.sh: no cargo-built dumpsyms at $reference" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# maturin relinks target/release/dumpsyms (stripped): the reference is kept as built.
cp "$reference" "$work/reference"
reference=$work/reference
"$python" -m venv "$work/build"
"$work/build/bin/pip" install -q 'maturin>=1.9,<2' 'auditwheel>=6'
rm -rf "$out"
(cd "$root" && "$work/build/bin/maturin" build --out "$out")
wheel=$(ls "$out"/dumpsyms-*.whl)
echo "wheel: $(basename "$wheel") ($(stat -c %s "$wheel") bytes)"
if cmp -s "$reference" "$root/target/release/dumpsyms"; then
    echo "wheel.sh: the reference is the wheel's own binary; build it with cargo first" >&2
    exit 1
fi

report=$("$work/build/bin/auditwheel" show "$wheel")
echo "$report"
policy=$(tr -s ' \n' ' ' <<<"$report" | sed -n 's/.*consistent with the following platform tag: "\([^"]*\)".*/\1/p')
[ -n "$policy" ] || { echo "wheel.sh: auditwheel names no manylinux policy" >&2; exit 1; }
case $(basename "$wheel") in
*-"$policy".whl) echo "tagged $policy, the policy auditwheel finds it meets" ;;
*) echo "wheel.sh: tagged otherwise than $policy" >&2; exit 1 ;;
esac

"$python" -m venv "$work/user"
"$work/user/bin/pip" install -q --no-index "$wheel"
installed=$work/user/bin/dumpsyms
[ -x "$installed" ] || { echo "wheel.sh: pip installed no dumpsyms" >&2; exit 1; }

fx=$root/fixtures
same() {
    "$reference" "$@" >"$work/want" 2>"$work/want.err"
    "$installed" "$@" >"$work/got" 2>"$work/got.err"
    if ! cmp -s "$work/want" "$work/got"; then
        echo "wheel.sh: the wheel's dumpsyms writes other bytes for: $*" >&2
        diff "$work/want" "$work/got" | head -20 >&2
        exit 1
    fi
    echo "same bytes ($(wc -c <"$work/want")): dumpsyms $*"
}
same --inlines "$fx/bin/x86_64/cpp-gcc-O2-dwarf5"
same "$fx/swift/libswiftnames.so"
same --inlines "$fx/windows/msvc-x86_64/app.exe"
same "$fx/macho/mac-arm64-O2"
same --version
same completions bash
same man
