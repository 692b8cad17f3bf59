//! `--shard K/N`: N runs over the same tree, each writing its share, together write the
//! store one run writes, byte for byte, each module exactly once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::*;

/// Every file under `dir`, by its path below it, with its bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

fn store(tree: &[&Path], store: &Path, extra: &[&str], env: &[(&str, &str)]) -> String {
    let mut cmd = dumpsyms_command();
    cmd.args(["--store"]).arg(store).args(extra).args(tree);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stderr).unwrap()
}

#[test]
fn shards_together_write_what_one_run_writes() {
    // ELF programs, and Mach-O files (universal ones split by slice).
    let elf = fixtures().join("bin/aarch64");
    let macho = fixtures().join("macho");
    let tree = [elf.as_path(), macho.as_path()];
    let whole = scratch("shard-whole");
    store(&tree, &whole, &[], &[]);
    let whole = files(&whole);
    assert!(whole.len() > 20, "{}", whole.len());

    let mut union = BTreeMap::new();
    for k in 1..=3 {
        let part = scratch(&format!("shard-{k}"));
        let said = store(&tree, &part, &["--shard", &format!("{k}/3")], &[]);
        assert!(said.contains(&format!("(this is {k}/3)")), "{said}");
        let part = files(&part);
        assert!(
            !part.is_empty() && part.len() < whole.len(),
            "shard {k}: {}",
            part.len()
        );
        for (path, bytes) in part {
            assert!(
                union.insert(path.clone(), bytes).is_none(),
                "{path:?} in two shards"
            );
        }
    }
    assert!(
        union == whole,
        "the shards' union differs from one run's store"
    );

    // auto/3 takes K from Kubernetes' JOB_COMPLETION_INDEX (0-based).
    let auto = scratch("shard-auto");
    store(
        &tree,
        &auto,
        &["--shard", "auto/3"],
        &[("JOB_COMPLETION_INDEX", "1")],
    );
    let second = scratch("shard-2");
    store(&tree, &second, &["--shard", "2/3"], &[]);
    assert!(files(&auto) == files(&second));
    // A shard that does not exist is a usage error.
    let o = dumpsyms(&["--store", "/tmp/x", "--shard", "4/3", elf.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
}
