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
/// own name says: `libfoo.so.1.debug` (the `objcopy --only-keep-debug` convention and
/// Fedora's) is `libfoo.so.1`'s. A name without the suffix (Debian's old layout,
/// `usr/lib/debug/usr/bin/foo`) is the binary's already.
pub(super) fn binary_name(file: &Path) -> Option<String> {
    let name = file.file_name()?.to_str()?;
    name.strip_suffix(".debug")
        .filter(|stem| !stem.is_empty())
        .map(str::to_string)
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
        assert_eq!(binary_name(Path::new(".debug")), None);
    }
}
