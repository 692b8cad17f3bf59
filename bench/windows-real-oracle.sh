#!/usr/bin/env bash
# The oracle for the real PDB of bench/make-windows-real.sh: llvm-symbolizer from
# LLVM 19 (LLVM 14 reads inline-site line annotations one line late) at 20,000
# addresses of .text drawn with a fixed seed, written as DIR/oracle.tsv by the script
# fixtures/windows/make.sh uses too (fixtures/windows/symbolizer-oracle.py). Names
# are read undemangled and demangled by GNU c++filt, as every other oracle of ours
# is: LLVM's demangler spells lambdas, function-pointer arguments and decltype
# otherwise than GNU's (and ours).
#
#   bench/windows-real-oracle.sh DIR     # DIR holds duckdb.dll and duckdb.pdb
set -euo pipefail
out=$1
symbolizer=$(command -v llvm-symbolizer-19 || echo /usr/lib/llvm-19/bin/llvm-symbolizer)
python3 "$(dirname "$0")/../fixtures/windows/symbolizer-oracle.py" "$out/duckdb.dll" \
    --symbolizer "$symbolizer" --sample 20000 --cxxfilt >"$out/oracle.tsv.tmp"
mv "$out/oracle.tsv.tmp" "$out/oracle.tsv"
echo "oracle: $(wc -l <"$out/oracle.tsv") addresses" >&2
