//! Compiles the C++ guard around Swift's demangler (src/demangle/swift_guard.cpp), and
//! names the commit the binary is built from for `--version`.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=src/demangle/swift_guard.cpp");
    cc::Build::new()
        .cpp(true)
        .file("src/demangle/swift_guard.cpp")
        .compile("dumpsyms_swift_guard");

    let version = env!("CARGO_PKG_VERSION");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let line = match checkout_commit(dir).or_else(|| packaged_commit(dir)) {
        Some(commit) => format!("{version} ({commit})"),
        None => version.to_string(),
    };
    println!("cargo:rustc-env=DUMPSYMS_VERSION={line}");
}

/// Hex digits of a commit shown: git's short form, unambiguous in any real repository.
const SHORT: usize = 12;

/// The commit of the git checkout this source is the root of; None for a source that
/// is not one (a tarball, a copy vendored inside another project's repository: that
/// repository's commit is not ours).
fn checkout_commit(dir: &Path) -> Option<String> {
    let top = git(dir, &["rev-parse", "--show-toplevel"])?;
    if Path::new(&top).canonicalize().ok()? != dir.canonicalize().ok()? {
        return None;
    }
    // A new commit, checkout or branch moves HEAD or the ref it names. Only files that
    // exist are watched: cargo reruns a build script for a missing one every time.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(dir, &["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        // --git-path finds each where it lives, also in a worktree.
        if let Some(path) = git(
            dir,
            &["rev-parse", "--path-format=absolute", "--git-path", &name],
        ) && Path::new(&path).exists()
        {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    let hash = git(dir, &["rev-parse", "HEAD"])?;
    Some(hash.chars().take(SHORT).collect())
}

/// The commit a crates.io package was made from: `cargo package` records it in
/// `.cargo_vcs_info.json`. Watching that file (by a relative path) matters beyond the
/// package: cargo treats the packaged copy and the checkout as one build-script unit
/// (it hashes a path package by its place in its workspace), so a checkout reusing a
/// package build's output finds the file missing there and reruns this script.
fn packaged_commit(dir: &Path) -> Option<String> {
    println!("cargo:rerun-if-changed=.cargo_vcs_info.json");
    let info = std::fs::read_to_string(dir.join(".cargo_vcs_info.json")).ok()?;
    // {"git": {"sha1": "<40 hex digits>", ...}, "path_in_vcs": ""}: one field is read,
    // which needs no JSON parser in the build.
    let after = &info[info.find("\"sha1\"")? + "\"sha1\"".len()..];
    let hash = after.split('"').nth(1)?;
    (hash.len() >= SHORT && hash.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| hash[..SHORT].to_string())
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_string())
}
