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
- Every item ARCHITECTURE.md's public-API paragraph (and its list of public error
  types, up to "Inside the crate") quotes is public: reachable from src/lib.rs through `pub mod` and `pub use`, or a `pub fn`
  of a reachable type (`Batch::new`).
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


# Names those paragraphs quote that are not this crate's items.
NOT_OURS = {"Display", "FromStr", "as_ref()", "source()", "String", "net", "cli", "-m"}
PUB_ITEM = re.compile(r"^\s*pub (?:fn|struct|enum|trait|const|static|type|mod) ([A-Za-z_]\w*)", re.M)
PUB_USE = re.compile(r"^\s*pub use ([^;]+);", re.M)


def module_file(folder, name):
    for rel in (os.path.join(folder, name + ".rs"), os.path.join(folder, name, "mod.rs")):
        if os.path.exists(os.path.join(ROOT, rel)):
            return rel
    return None


def reachable():
    """Every public path of the crate (`batch::byid::ById`), and the file of each."""
    found = {}
    todo = [("", "src/lib.rs")]
    while todo:
        prefix, rel = todo.pop()
        text = re.sub(r"#\[cfg\(test\)\]\s*mod tests[\s\S]*", "", read(rel))
        folder = os.path.dirname(rel) if rel.endswith(("lib.rs", "mod.rs")) else rel[:-3]
        for m in PUB_ITEM.finditer(text):
            path = prefix + m.group(1)
            found[path] = rel
            if re.match(r"\s*pub mod", m.group(0)):
                sub = module_file(folder, m.group(1))
                if sub:
                    todo.append((path + "::", sub))
        for m in PUB_USE.finditer(text):
            spec = re.sub(r"\s+", "", m.group(1))
            head, _, tail = spec.partition("{")
            names = tail.rstrip("}").split(",") if tail else [head.rsplit("::", 1)[-1]]
            for name in filter(None, names):
                found[prefix + name.split("::")[-1].split(" as ")[-1]] = rel
    return found


def check_public_names():
    text = read("docs/ARCHITECTURE.md")
    errors = text.find("No public function returns")
    api = text.find("- The public API:")
    spans = [(errors, text.find("Inside the crate", errors)), (api, text.find("\n- ", api + 1))]
    if any(start < 0 or end < 0 for start, end in spans):
        problems.append("docs/ARCHITECTURE.md: no public-API paragraph to check")
        return
    public = reachable()
    sources_text = {rel: read(rel) for rel in sources()}
    quoted = [m for start, end in spans for m in QUOTED.finditer(text[start:end])]
    for m in quoted:
        name = re.sub(r"\s+", "", m.group(1))
        if name in NOT_OURS or not re.fullmatch(r"[A-Za-z_]\w*(::[A-Za-z_]\w*)*", name):
            continue
        if any(p == name or p.endswith("::" + name) for p in public):
            continue
        owner, _, method = name.rpartition("::")
        holders = [p for p in public if p == owner or p.endswith("::" + owner)]
        if method and holders and any(
            re.search(r"impl[^{]*\b" + re.escape(owner.split("::")[-1]) + r"\b[^{]*\{", t)
            and re.search(r"^\s*pub fn " + re.escape(method) + r"\b", t, re.M)
            for t in sources_text.values()
        ):
            continue
        problems.append(f"docs/ARCHITECTURE.md: names `{name}` as public, which is not")


check_architecture()
check_quoted_paths()
check_lengths()
check_public_names()
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
