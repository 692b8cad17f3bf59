//! What the files of a store run are to it, found before any is dumped: which are
//! modules, which are passed over, and which debug files have no binary in the run and
//! are dumped on their own (a directory of `.dSYM` bundles, of `objcopy
//! --only-keep-debug` files, of PDBs whose images are gone: the only FUNC, line and
//! INLINE records a crash service will ever get for those modules).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::slices;
use crate::batch::tree;
use crate::options::Options;

pub(super) struct Census {
    /// Each file's role; `None` for an input given by itself (always dumped).
    pub roles: Vec<Option<tree::Role>>,
    /// The debug ids of the modules of the run (every slice of each), and the names
    /// their debug links give: a debug file that has one of them is read through its
    /// binary, and not dumped on its own. Empty when the run holds no debug file.
    claimed: HashSet<String>,
    debuglinks: HashSet<String>,
}

impl Census {
    /// The roles of `files` (`walked`: found under a directory or in an archive), on the
    /// caller's worker threads; the modules' ids only when a debug file needs them.
    pub fn take(
        opts: &Options,
        files: &[PathBuf],
        walked: &(dyn Fn(&Path) -> bool + Sync),
    ) -> Census {
        let roles: Vec<Option<tree::Role>> = files
            .par_iter()
            .map(|f| walked(f).then(|| tree::role(f)))
            .collect();
        let mut census = Census {
            roles,
            claimed: HashSet::new(),
            debuglinks: HashSet::new(),
        };
        if !census
            .roles
            .iter()
            .any(|r| matches!(r, Some(tree::Role::DebugFile(_))))
        {
            return census;
        }
        let modules: Vec<(Vec<String>, Option<String>)> = files
            .par_iter()
            .zip(&census.roles)
            .filter(|(_, role)| matches!(role, None | Some(tree::Role::Module)))
            .map(|(file, _)| {
                let ids = slices(opts, file)
                    .iter()
                    .filter_map(|o| header_id(o, file))
                    .collect();
                (ids, crate::locate::debuglink_name(file))
            })
            .collect();
        for (ids, link) in modules {
            census.claimed.extend(ids);
            census.debuglinks.extend(link);
        }
        census
    }

    /// Whether the debug file `file`, dumped as `opts` says (one slice of it), is read
    /// through a binary of the run.
    pub fn claims(&self, opts: &Options, file: &Path) -> bool {
        let named = file
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| self.debuglinks.contains(n));
        named || header_id(opts, file).is_some_and(|id| self.claimed.contains(&id))
    }
}

/// The debug id `opts` gives the module of `file`, from its headers alone.
fn header_id(opts: &Options, file: &Path) -> Option<String> {
    let header = Options {
        header_only: true,
        ..opts.clone()
    };
    crate::dumping::dump(file, &header)
        .ok()
        .map(|d| d.module.debug_id.to_string())
}

/// The name of the binary a separate ELF debug file was split from, as the debug file's
/// own name says: `libfoo.so.1.debug` (the `objcopy --only-keep-debug` convention) is
/// `libfoo.so.1`'s, and so is Fedora's unique debug name
/// `libfoo.so.1-1.2-3.fc40.x86_64.debug` (`<binary>-<version>-<release>.<arch>`). A name
/// without the suffix (Debian's old layout, `usr/lib/debug/usr/bin/foo`) is the
/// binary's already.
pub(super) fn binary_name(file: &Path) -> Option<String> {
    let name = file.file_name()?.to_str()?;
    name.strip_suffix(".debug")
        .filter(|stem| !stem.is_empty())
        .map(|stem| without_package_version(stem).to_string())
}

/// `stem` less the `-<version>-<release>.<arch>` that Fedora's `find-debuginfo`
/// (`%_unique_debug_names`) appends, if it ends so: rpm allows no `-` in a version or
/// release, and the architectures are rpm's.
fn without_package_version(stem: &str) -> &str {
    const ARCHES: [&str; 14] = [
        "x86_64",
        "i686",
        "i586",
        "i386",
        "aarch64",
        "ppc64le",
        "ppc64",
        "s390x",
        "armv7hl",
        "armv7hnl",
        "riscv64",
        "loongarch64",
        "mips64el",
        "noarch",
    ];
    let Some(rest) = ARCHES
        .iter()
        .find_map(|arch| stem.strip_suffix(arch)?.strip_suffix('.'))
    else {
        return stem;
    };
    let mut parts = rest.rsplitn(3, '-');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(release), Some(version), Some(binary))
            if !release.is_empty()
                && version.starts_with(|c: char| c.is_ascii_digit())
                && !binary.is_empty() =>
        {
            binary
        }
        _ => stem,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_debug_file_is_named_for_its_binary() {
        assert_eq!(
            binary_name(Path::new("d/libfoo.so.1.debug")).as_deref(),
            Some("libfoo.so.1")
        );
        assert_eq!(binary_name(Path::new("usr/lib/debug/usr/bin/foo")), None);
        assert_eq!(
            binary_name(Path::new("libdemo.so.1.2.3-1.2-3.fc40.x86_64.debug")).as_deref(),
            Some("libdemo.so.1.2.3")
        );
        assert_eq!(
            binary_name(Path::new("gnome-shell-46.0-1.fc40.aarch64.debug")).as_deref(),
            Some("gnome-shell")
        );
        // Not a package's version: kept whole.
        assert_eq!(
            binary_name(Path::new("tool-x86_64.debug")).as_deref(),
            Some("tool-x86_64")
        );
        assert_eq!(
            binary_name(Path::new("a-b.x86_64.debug")).as_deref(),
            Some("a-b.x86_64")
        );
        assert_eq!(binary_name(Path::new(".debug")), None);
    }
}
