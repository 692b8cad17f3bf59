#!/usr/bin/env python3
"""Fails when the docs and the sources drift apart. Run by .ci/run:

    python3 .ci/doc-check.py

- Every file under src/ is named in docs/ARCHITECTURE.md: its file name, and the folder
  it sits in (`wine.rs` and `input/`; a folder's `mod.rs` by the folder).
- Every path the docs quote (in backticks, or as a link's target) exists: those under
  src/, tests/, fixtures/, bench/, docs/, fuzz/, examples/, packaging/ and .ci/, and the
  local files links point to. Placeholders (`<arch>`, `*`, `{a,b}`, `…`) are not paths.
- Every `cargo test --test NAME` the docs quote names a test target.
- No source file is over 1,000 lines.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ["README.md", "CONTRIBUTING.md"] + [
    os.path.join("docs", f) for f in sorted(os.listdir(os.path.join(ROOT, "docs"))) if f.endswith(".md")
]
MAX_LINES = 1000
QUOTED = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
ROOTS = ("src/", "tests/", "fixtures/", "bench/", "docs/", "fuzz/", "examples/", "packaging/", ".ci/")

problems = []


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def sources():
    for d, _, files in os.walk(os.path.join(ROOT, "src")):
        for f in sorted(files):
            if f.endswith((".rs", ".cpp")):
                yield os.path.relpath(os.path.join(d, f), ROOT)


def check_architecture():
    text = read("docs/ARCHITECTURE.md")
    for rel in sources():
        parts = rel.split("/")[1:]  # under src/
        name, folders = parts[-1], parts[:-1]
        if name == "mod.rs":
            wanted = [folders[-1] + "/"]
        else:
            wanted = [name] + ([folders[-1] + "/"] if folders else [])
        missing = [w for w in wanted if w not in text]
        if missing:
            problems.append(f"docs/ARCHITECTURE.md does not name {rel} ({', '.join(missing)})")


def is_placeholder(path):
    return any(c in path for c in "<>*{}…$|") or path.endswith("/...")


def check_quoted_paths():
    targets = {f[:-3] for f in os.listdir(os.path.join(ROOT, "tests")) if f.endswith(".rs")}
    targets |= {d for d in os.listdir(os.path.join(ROOT, "tests"))
                if os.path.isfile(os.path.join(ROOT, "tests", d, "main.rs"))}
    for doc in DOCS:
        if not os.path.exists(os.path.join(ROOT, doc)):
            continue
        text = read(doc)
        here = os.path.dirname(doc)
        for m in QUOTED.finditer(text):
            quoted = m.group(1)
            for t in re.findall(r"cargo test[^`]*?--test\s+(\S+)", quoted):
                if t not in targets:
                    problems.append(f"{doc}: `{quoted}` names no test target ({t})")
            for word in quoted.split():
                word = word.rstrip(".,;:)'\"").lstrip("(")
                word = re.sub(r"(:\d+)+$", "", word)  # file:line
                if not word.startswith(ROOTS) or is_placeholder(word):
                    continue
                path = word.split("#")[0].split("'s")[0]
                if not os.path.exists(os.path.join(ROOT, path)):
                    problems.append(f"{doc}: quotes {path}, which does not exist")
        for m in LINK.finditer(text):
            target = m.group(1).split("#")[0]
            if not target or "://" in target or target.startswith("mailto:"):
                continue
            if not os.path.exists(os.path.normpath(os.path.join(ROOT, here, target))):
                problems.append(f"{doc}: links to {target}, which does not exist")


def check_lengths():
    for rel in sources():
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > MAX_LINES:
            problems.append(f"{rel} has {n} lines (at most {MAX_LINES})")


check_architecture()
check_quoted_paths()
check_lengths()
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
