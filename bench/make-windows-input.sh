#!/usr/bin/env bash
# Builds the Windows benchmark input: a synthetic x86_64 program of 120 translation
# units, each with 150 functions (templates, forced-inline helpers, recursion), built
# with clang-cl /O2 /Z7 and linked by lld-link /DEBUG: about 18,000 functions, 18,000
# inline sites and 18,000 .pdata entries; a 15 MB image and a 13 MB PDB.
#
#   bench/make-windows-input.sh DIR      # writes DIR/big.exe and DIR/big.pdb
#
# Needs clang and lld. Takes about 3 minutes on 2 cores.
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
python3 - <<'PY'
N = 120
for t in range(N):
    with open(f"tu{t}.cpp", "w") as f:
        f.write(f"namespace ns{t} {{\n")
        f.write("template <typename T> struct Box { T v; __declspec(noinline) T get(int k) const "
                "{ return v * k + 1; } T twice() const { return v + v; } };\n")
        for i in range(150):
            f.write(f"static __forceinline int h{i}(int a) {{ return a * {i + 3} ^ (a >> 2); }}\n")
            f.write(f"__declspec(noinline) int f{i}(int a, int b) {{ Box<int> x{{a}}; int s = 0; "
                    f"for (int j = 0; j < b; ++j) s += h{i}(j) + x.twice(); return s + x.get(b) + "
                    f"(a > 0 ? f{max(i - 1, 0)}(a - 1, b) : 0); }}\n")
        f.write(f"}}\nint entry{t}(int a) {{ return ")
        f.write(" + ".join(f"ns{t}::f{i}(a, {i})" for i in range(0, 150, 7)))
        f.write("; }\n")
with open("main.cpp", "w") as f:
    f.write("void operator delete(void*) noexcept {}\n"
            "void operator delete(void*, decltype(sizeof 0)) noexcept {}\n"
            "extern \"C\" void *memset(void *d, int c, decltype(sizeof 0) n) "
            "{ volatile char *p = (volatile char *)d; while (n--) *p++ = (char)c; return d; }\n")
    for t in range(N):
        f.write(f"int entry{t}(int);\n")
    f.write("extern \"C\" int entry() { int s = 0;\n")
    for t in range(N):
        f.write(f"  s += entry{t}(s);\n")
    f.write("  return s; }\n")
PY
ls ./*.cpp | xargs -P"$(nproc)" -I{} clang --driver-mode=cl --target=x86_64-pc-windows-msvc \
    /O2 /Z7 /GS- /GR- /Gs1000000 /c -- {} >/dev/null
lld-link /Brepro /DEBUG /NODEFAULTLIB /ENTRY:entry /SUBSYSTEM:CONSOLE \
    /OUT:"$out/big.exe" /PDB:"$out/big.pdb" ./*.obj
