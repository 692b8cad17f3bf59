//! What the files of a store run are to it, found before any is dumped: which are
//! modules, which are passed over, and which debug files have no binary in the run and
//! are dumped on their own (a directory of `.dSYM` bundles, of `objcopy
//! --only-keep-debug` files, of PDBs whose images are gone: the only FUNC, line and
//! INLINE records a crash service will ever get for those modules).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::batch::tree;
use crate::load::Input;
use crate::model::module::Module;
use crate::options::Options;

pub(super) struct Census {
    /// Each file as its look found it, in the files' order.
    pub looks: Vec<Look>,
    /// The debug ids of the modules of the run (every slice of each), and the names
    /// their debug links give: a debug file that has one of them is read through its
    /// binary, and not dumped on its own. Empty when the run holds no debug file.
    claimed: HashSet<String>,
    debuglinks: HashSet<String>,
}

/// One file of a store run, from one look at it before any file is dumped: opened and
/// its headers parsed once, and what they say carried to its dump (the census, `--shard`
/// and `--skip-existing` all go by it; each once read the file again).
pub(super) struct Look {
    /// What the file is to the run; `None` for an input given by itself (always dumped).
    pub role: Option<tree::Role>,
    /// The dumps the file makes: one per slice of a universal Mach-O (unless `--arch`
    /// picks one), else one; each with the header it writes, `None` where the headers
    /// cannot be read (its dump then says why). Empty for a file that is not dumped.
    pub dumps: Vec<(Options, Option<Module>)>,
    /// A module's `.gnu_debuglink` name.
    debuglink: Option<String>,
}

impl Census {
    /// The looks at `files` (`walked`: found under a directory or in an archive), on
    /// the caller's worker threads.
    pub fn take(
        opts: &Options,
        files: &[PathBuf],
        walked: &(dyn Fn(&Path) -> bool + Sync),
    ) -> Census {
        let looks: Vec<Look> = files
            .par_iter()
            .map(|f| look_contained(opts, f, walked(f)))
            .collect();
        let mut census = Census {
            looks,
            claimed: HashSet::new(),
            debuglinks: HashSet::new(),
        };
        if !census
            .looks
            .iter()
            .any(|l| matches!(l.role, Some(tree::Role::DebugFile(_))))
        {
            return census;
        }
        for look in &census.looks {
            if matches!(look.role, None | Some(tree::Role::Module)) {
                let headers = look.dumps.iter().filter_map(|(_, h)| h.as_ref());
                census
                    .claimed
                    .extend(headers.map(|h| h.debug_id.to_string()));
                census.debuglinks.extend(look.debuglink.clone());
            }
        }
        census
    }

    /// Whether the debug file `file`, one of whose dumps writes `header`, is read
    /// through a binary of the run.
    pub fn claims(&self, file: &Path, header: Option<&Module>) -> bool {
        let named = file
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| self.debuglinks.contains(n));
        named || header.is_some_and(|h| self.claimed.contains(h.debug_id.as_ref()))
    }
}

/// [`look`], where a panic in a reader makes the file a module whose headers cannot be
/// read: its dump meets the same panic, contained and reported with the file's name.
fn look_contained(opts: &Options, file: &Path, walked: bool) -> Look {
    let look = || look(opts, file, walked);
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(look)).unwrap_or_else(|_| Look {
        role: walked.then_some(tree::Role::Module),
        dumps: vec![(opts.clone(), None)],
        debuglink: None,
    })
}

fn look(opts: &Options, file: &Path, walked: bool) -> Look {
    let mut look = Look {
        role: None,
        dumps: Vec::new(),
        debuglink: None,
    };
    let opened = match walked {
        true => tree::open(file).map_err(Some),
        // A .dSYM bundle given stands for the DWARF file inside it.
        false => crate::locate::resolve_dsym_bundle(file)
            .and_then(|f| Input::open_as_it_is(&f))
            .map_err(|_| None),
    };
    let input = match opened {
        Ok(input) => input,
        Err(role) => {
            // Given by itself, it is dumped all the same: the dump says what is wrong.
            if role.is_none() {
                look.dumps.push((opts.clone(), None));
            }
            look.role = role;
            return look;
        }
    };
    if walked {
        let role = tree::role(&input);
        let dumped = matches!(role, tree::Role::Module | tree::Role::DebugFile(_));
        look.role = Some(role);
        if !dumped {
            return look;
        }
    }
    look.dumps = dumps(opts, file, &input, look.role.as_ref());
    if matches!(look.role, None | Some(tree::Role::Module)) {
        look.debuglink = crate::locate::debuglink_name(&input);
    }
    let Ok(input) = input.msfz_unpacked() else {
        return look;
    };
    for (o, header) in &mut look.dumps {
        let header_only = Options {
            header_only: true,
            ..o.clone()
        };
        *header = crate::dumping::dump_opened(&input, &header_only)
            .ok()
            .map(|d| d.module);
    }
    look
}

/// The options of each dump `input` makes, without their headers yet.
fn dumps(
    opts: &Options,
    file: &Path,
    input: &Input,
    role: Option<&tree::Role>,
) -> Vec<(Options, Option<Module>)> {
    let mut dumps = match (&opts.arch, crate::load::architectures(input)) {
        (None, Ok(arches)) if arches.len() > 1 => arches
            .into_iter()
            .map(|arch| Options {
                arch: Some(arch),
                ..opts.clone()
            })
            .collect(),
        _ => vec![opts.clone()],
    };
    // A debug file no binary of the run reads is dumped on its own, under the name of
    // the binary it was split from: the store path that binary's dump would replace.
    if let Some(tree::Role::DebugFile(_)) = role
        && opts.name.is_none()
        && let Some(name) = binary_name(file)
    {
        for o in &mut dumps {
            o.name = Some(name.clone());
        }
    }
    dumps.into_iter().map(|o| (o, None)).collect()
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
