//! Whole build trees and distributions: the files under a directory that are modules to
//! dump. Everything else is passed over: files that are not object files, silently;
//! object files that are not modules of their own (relocatable objects, split-DWARF and
//! dwz files, which are read through the binaries they belong to) with the reason, for
//! `-v`. Debug files (separate debug files, dSYM companions, PDBs) are read through
//! their binaries too, when the run has them.

use std::path::{Path, PathBuf};

use object::{Object as _, ObjectSection as _};

use crate::batch::report::Skip;
use crate::load::{Input, Object};

/// What a file under a tree is to the dumper.
#[derive(Debug)]
pub enum Role {
    /// A module: dump it.
    Module,
    /// Not an object file at all (sources, scripts, data): passed over silently.
    NotObject,
    /// An object file that is not dumped on its own, and why.
    Companion(Skip),
    /// A debug file (separate ELF debug file, dSYM's DWARF file, PDB): read through its
    /// binary when the run has it, else dumped on its own (see [`crate::batch`]).
    DebugFile(Skip),
    /// A file that cannot be read (permissions), or is no longer a regular file: a
    /// failure of the run, never passed over silently.
    Unreadable(std::io::Error),
}

/// The regular files under `paths`, walked recursively in name order (so the order is
/// the same on every run), and the directories that could not be read. Symbolic links
/// are not followed inside a tree: a link to a library (`libfoo.so` → `libfoo.so.1`)
/// would dump it twice, and a link to a directory could loop. A path given directly is
/// taken as it is, link or not.
pub fn files(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<(PathBuf, std::io::Error)>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for path in paths {
        if path.is_dir() && !is_dsym_bundle(path) {
            walk(path, &mut out, &mut errors);
        } else {
            out.push(path.clone());
        }
    }
    (out, errors)
}

/// A `.dSYM` bundle given as an input stands for the DWARF file inside it (see
/// [`crate::dumping::dump`]); walked into, that file would be a companion.
pub fn is_dsym_bundle(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("dSYM"))
        && path.is_dir()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>, errors: &mut Vec<(PathBuf, std::io::Error)>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            errors.push((dir.to_path_buf(), e));
            return;
        }
    };
    let mut entries: Vec<(PathBuf, std::fs::FileType)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| Some((e.path(), e.file_type().ok()?)))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (path, kind) in entries {
        // Another run's unpacked archive, in a store inside the tree walked.
        let unpacking = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(".dumpsyms-unpacking-"));
        if kind.is_dir() && !unpacking {
            walk(&path, out, errors);
        } else if kind.is_file() {
            out.push(path);
        }
    }
}

/// `path` opened to be looked at, or the role of a file that cannot be: one that cannot
/// be read (or was replaced by a FIFO, a device, a directory since the walk listed it)
/// is a failure of the run; an empty one is no object file.
pub fn open(path: &Path) -> Result<Input, Role> {
    use crate::error::ErrorKind;
    Input::open_as_it_is(path).map_err(|e| match e.kind {
        ErrorKind::Io(e) => Role::Unreadable(e),
        ErrorKind::NotObject(why)
            if why.downcast_ref::<crate::load::NotAFile>()
                == Some(&crate::load::NotAFile::Empty) =>
        {
            Role::NotObject
        }
        other => Role::Unreadable(std::io::Error::other(format!(
            "no longer a regular file (replaced while the tree was walked): {other}"
        ))),
    })
}

/// What `input` (opened by [`open`]: an MSFZ PDB still packed) is to a tree dump. Files
/// that cannot be parsed are modules: the dump then says what is wrong with them.
pub fn role(input: &Input) -> Role {
    let bytes = input.bytes();
    let Some(head) = bytes.first_chunk::<4>() else {
        return Role::NotObject;
    };
    if crate::magic::starts_like_pdb(bytes) {
        return Role::DebugFile(Skip::Pdb);
    }
    if !crate::magic::looks_like_object(head) {
        return Role::NotObject;
    }
    if *head == [0xCA, 0xFE, 0xBA, 0xBE] && object::FileKind::parse(bytes).is_err() {
        // Java class files share the universal Mach-O magic.
        return Role::NotObject;
    }
    if head.starts_with(b"MZ") {
        // MS-DOS programs share the magic; only PE images are modules.
        return match object::FileKind::parse(bytes) {
            Ok(object::FileKind::Pe32 | object::FileKind::Pe64) => Role::Module,
            _ => Role::NotObject,
        };
    }
    if crate::magic::is_dsym(first_slice(bytes)) {
        return Role::DebugFile(Skip::DsymDwarf);
    }
    let obj = match Object::parse_any(input) {
        Ok(o) => o,
        Err(_) => return Role::Module,
    };
    match obj.file.kind() {
        object::ObjectKind::Relocatable => {
            return Role::Companion(Skip::Relocatable);
        }
        object::ObjectKind::Core => return Role::Companion(Skip::Core),
        _ => {}
    }
    // A separate debug file keeps the section headers of the code, without the bytes.
    let has_code = obj.file.sections().any(|s| {
        s.kind() == object::SectionKind::Text && s.file_range().is_some_and(|(_, size)| size > 0)
    });
    if !has_code {
        // A separate debug file keeps the headers of the code's sections (without their
        // bytes); dwz's common file, DWARF shared by several debug files, has none.
        let code_headers = obj.file.sections().any(|s| {
            matches!(s.flags(), object::SectionFlags::Elf { sh_flags, .. }
                if sh_flags.contains(object::elf::SHF_EXECINSTR))
        });
        return match code_headers {
            true => Role::DebugFile(Skip::DebugFile),
            false => Role::Companion(Skip::Dwz),
        };
    }
    Role::Module
}

/// A universal Mach-O's first slice (its slices are all of one file type), else `data`.
fn first_slice(data: &[u8]) -> &[u8] {
    use object::read::macho::{FatArch, MachOFatFile32, MachOFatFile64};
    let range = match MachOFatFile32::parse(data) {
        Ok(fat) => fat.arches().first().map(|a| a.file_range()),
        Err(_) => MachOFatFile64::parse(data)
            .ok()
            .and_then(|fat| fat.arches().first().map(|a| a.file_range())),
    };
    range
        .and_then(|(at, len)| data.get(usize::try_from(at).ok()?..usize::try_from(at + len).ok()?))
        .unwrap_or(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(rel)
    }

    #[test]
    fn roles() {
        let role = |path: &Path| open(path).map_or_else(|found| found, |input| role(&input));
        assert!(matches!(
            role(&fixture("bin/x86_64/c-gcc-O2-dwarf5")),
            Role::Module
        ));
        assert!(matches!(role(&fixture("extra/buildid/app")), Role::Module));
        assert!(matches!(role(&fixture("macho/mac-arm64-O2")), Role::Module));
        assert!(matches!(
            role(&fixture("macho/mac-universal-O2")),
            Role::Module
        ));
        assert!(matches!(role(&fixture("src/sample.c")), Role::NotObject));
        assert!(matches!(
            role(&fixture("make-fixtures.sh")),
            Role::NotObject
        ));
        assert!(matches!(
            role(&fixture("extra/debuglink/app.debug")),
            Role::DebugFile(_)
        ));
        assert!(matches!(
            role(&fixture("extra/dwz4/dumpsyms-fixture.debug")),
            Role::Companion(_)
        ));
        assert!(matches!(
            role(&fixture("extra/split/dwp5/app.dwp")),
            Role::Companion(_)
        ));
        for dsym in ["mac-arm64-O2", "mac-universal-O2"] {
            let path = format!("macho/{dsym}.dSYM/Contents/Resources/DWARF/{dsym}");
            assert!(
                matches!(role(&fixture(&path)), Role::DebugFile(_)),
                "{path}"
            );
        }
    }

    #[test]
    fn walks_in_name_order_without_following_links() {
        let (files, errors) = files(&[fixture("extra/split")]);
        assert!(errors.is_empty());
        let mut sorted = files.clone();
        sorted.sort();
        assert_eq!(files, sorted);
        assert!(files.iter().any(|f| f.ends_with("dwo4/app")));
        // A dSYM bundle given as an input is one, not a tree.
        let bundle = fixture("macho/mac-arm64-O2.dSYM");
        assert_eq!(super::files(std::slice::from_ref(&bundle)).0, [bundle]);
    }
}
