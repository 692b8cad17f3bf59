//! Archives and packages given to a store run, walked like directories: ZIP and the
//! formats built on it (`.apk`, `.aab`, `.aar`, `.ipa`, `.jar`, App Store Connect's
//! `dSYMs.zip`), tar with gzip, xz, zstd or bzip2 (Arch's `.pkg.tar.zst`, Alpine's
//! `.apk`), Debian `.deb`/`.ddeb` packages, RPM packages, `newc` cpio archives, and
//! squashfs images (snaps).
//!
//! The members a dump can use (object files, PDBs, and archives one level down) are
//! written under a directory of the run's own inside the store, which goes when the run
//! ends; nothing is written anywhere else, and a member's name never leaves that
//! directory. Everything else in an archive is read past, not written. What an archive
//! may unpack to is bounded by its size ([`Budget`]), so a decompression bomb stops
//! early with its archive named, and what was taken before stays.

mod cpio;
mod deb;
pub(crate) mod leftovers;
mod lzo;
mod rpm;
mod source;
mod squashfs;
mod tar;
mod zip;

pub(crate) use source::Source;

use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::error::{Warning, WarningKind};

/// What kind of archive a file is, by its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Zip,
    Tar(Packing),
    /// A Debian package (`ar` holding `debian-binary` first).
    Deb,
    /// An RPM package.
    Rpm,
    /// A `newc` cpio archive, not compressed.
    Cpio,
    /// A squashfs image (a snap).
    Squashfs,
}

/// How a tar stream is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Packing {
    Plain,
    Gzip,
    Xz,
    Zstd,
    Bzip2,
    /// Raw LZMA (`.lzma`), told by an RPM header only: it has no magic.
    Lzma,
}

impl Packing {
    /// The compression whose magic `head` starts with; `None` when it has none of them.
    fn of(head: &[u8]) -> Option<Packing> {
        Some(match head {
            [0x1F, 0x8B, ..] => Packing::Gzip,
            [0xFD, b'7', b'z', b'X', b'Z', 0, ..] => Packing::Xz,
            // A frame, or a skippable frame (pzstd begins with one).
            [0x28, 0xB5, 0x2F, 0xFD, ..] | [0x50..=0x5F, 0x2A, 0x4D, 0x18, ..] => Packing::Zstd,
            [b'B', b'Z', b'h', b'1'..=b'9', ..] => Packing::Bzip2,
            _ => return None,
        })
    }
}

/// What `head` (the first 512 bytes of a file, or fewer) says the file is, if an
/// archive. A compressed stream is taken for a compressed tar: a tool that compresses
/// one file makes nothing a symbol store could use, and the tar reader then says it is
/// not one.
pub(crate) fn kind(head: &[u8]) -> Option<Kind> {
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        return Some(Kind::Zip);
    }
    if head.starts_with(b"!<arch>\n") && head.get(8..21) == Some(b"debian-binary") {
        return Some(Kind::Deb);
    }
    if rpm::starts_like_rpm(head) {
        return Some(Kind::Rpm);
    }
    if squashfs::starts_like_squashfs(head) {
        return Some(Kind::Squashfs);
    }
    if head.starts_with(b"070701") || head.starts_with(b"070702") {
        return Some(Kind::Cpio);
    }
    if head.get(257..262) == Some(b"ustar") {
        return Some(Kind::Tar(Packing::Plain));
    }
    Packing::of(head).map(Kind::Tar)
}

/// The kind of archive at `path`, if it is a regular file that is one.
pub(crate) fn kind_of_file(path: &Path) -> Option<Kind> {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let mut head = Vec::with_capacity(512);
    crate::load::open_nonblocking(path)
        .and_then(|f| f.take(512).read_to_end(&mut head))
        .ok()?;
    kind(&head)
}

/// An archive may unpack to at most this many times its own size (and always to
/// [`MIN_BUDGET`]): real packages of binaries and debug files inflate 3 to 10 times,
/// decompression bombs a thousand times and more.
const MAX_RATIO: u64 = 100;

/// What any archive may unpack to, however small: a few small members of zeros compress
/// far beyond [`MAX_RATIO`] and are no bomb. A run's archives together may unpack to
/// [`MAX_RATIO`] times their sizes plus this once, not once each.
pub(crate) const MIN_BUDGET: u64 = 256 << 20;

/// What the archives of sizes `sizes` may unpack to in one run, together.
pub(crate) fn run_budget(sizes: impl IntoIterator<Item = u64>) -> u64 {
    sizes
        .into_iter()
        .fold(0u64, |sum, s| {
            sum.saturating_add(s.saturating_mul(MAX_RATIO))
        })
        .saturating_add(MIN_BUDGET)
}

/// The members written from the archives of one run, at most: a real package holds
/// hundreds; an archive of tens of thousands of tiny "object files" is an attack on the
/// time of the run, and the ones past this are named and left.
pub(crate) const MAX_MEMBERS: usize = 20_000;

/// How deep archives are followed: an archive given, and the archives in it.
const MAX_DEPTH: u8 = 2;

/// The bytes an archive may still unpack to: everything decompressed counts, members
/// written and members read past alike. Shared by the threads that read one archive.
pub(crate) struct Budget {
    left: AtomicU64,
    limit: u64,
    spent: AtomicBool,
}

impl Budget {
    fn for_archive(size: u64) -> Budget {
        let limit = size.saturating_mul(MAX_RATIO).max(MIN_BUDGET);
        Budget {
            left: AtomicU64::new(limit),
            limit,
            spent: AtomicBool::new(false),
        }
    }

    /// This budget, or `cap` if that is less.
    fn at_most(self, cap: u64) -> Budget {
        let limit = self.limit.min(cap);
        Budget {
            left: AtomicU64::new(limit),
            limit,
            spent: AtomicBool::new(false),
        }
    }

    /// The bytes spent.
    fn used(&self) -> u64 {
        self.limit - self.left.load(Ordering::Relaxed)
    }

    /// Whether it was found too small: the archive is not read further.
    fn spent(&self) -> bool {
        self.spent.load(Ordering::Relaxed)
    }

    fn spend(&self, n: usize) -> io::Result<()> {
        let taken = self
            .left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(n as u64)
            });
        if taken.is_ok() {
            return Ok(());
        }
        self.spent.store(true, Ordering::Relaxed);
        Err(io::Error::other(format!(
            "unpacks to more than {} MiB (its budget: {MAX_RATIO} times its size, within its outer archive's): a decompression bomb? Not read further",
            self.limit >> 20
        )))
    }
}

/// A reader whose bytes are counted against a [`Budget`].
pub(crate) struct Counted<'b, R> {
    inner: R,
    budget: &'b Budget,
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.budget.spent() {
            return Err(io::Error::other(
                "not read further: the archive's budget is spent",
            ));
        }
        let n = self.inner.read(buf)?;
        self.budget.spend(n)?;
        Ok(n)
    }
}

/// One archive unpacked: where its members went, and the name they are shown by.
#[derive(Debug, Clone)]
pub struct Unpacked {
    /// The archive as the user knows it: the path given, or `outer!member` for an
    /// archive inside another.
    pub shown: PathBuf,
    /// The directory its members were written under.
    pub dir: PathBuf,
}

/// The archives of a run, unpacked under one temporary directory in the store, which
/// is removed when this is dropped.
pub(crate) struct Unpacking {
    /// `None` until the first archive.
    temp: Option<tempfile::TempDir>,
    store: PathBuf,
    /// Every archive unpacked, in the order given (the archives inside one after it).
    pub unpacked: Vec<Unpacked>,
    /// What was refused or left inside the archives, for the report.
    pub warnings: Vec<(PathBuf, Warning)>,
    /// Archives that could not be read to their end: the members before the damage were
    /// taken.
    pub failures: Vec<(PathBuf, String)>,
    members: AtomicUsize,
    /// How many threads read a ZIP archive's members at once.
    threads: usize,
    /// What the run's archives may still unpack to, together ([`run_budget`]).
    run_left: u64,
}

impl Unpacking {
    /// The run's unpacking into `store`, its archives together unpacking to at most
    /// `budget` bytes.
    pub(crate) fn new(store: &Path, threads: usize, budget: u64) -> Unpacking {
        Unpacking {
            temp: None,
            store: store.to_path_buf(),
            unpacked: Vec::new(),
            warnings: Vec::new(),
            failures: Vec::new(),
            members: AtomicUsize::new(0),
            threads: threads.max(1),
            run_left: budget,
        }
    }

    /// Unpacks the archive at `path`, of kind `kind`, shown as `shown`, and those inside
    /// it: each into a directory of [`Unpacking::unpacked`], its damage in
    /// [`Unpacking::failures`].
    pub(crate) fn unpack(&mut self, path: &Path, shown: &Path, kind: Kind) {
        let spent = self.unpack_at(path, shown, kind, 1, self.run_left);
        self.run_left = self.run_left.saturating_sub(spent);
    }

    /// As [`Unpacking::unpack`], `depth` archives down, unpacking to at most `cap`
    /// bytes: an archive inside another may unpack to what is left of the outer one's
    /// budget, not to a hundred times its own size again. The bytes it and the archives
    /// inside it used.
    fn unpack_at(&mut self, path: &Path, shown: &Path, kind: Kind, depth: u8, cap: u64) -> u64 {
        let dir = match self.new_dir() {
            Ok(dir) => dir,
            Err(e) => {
                self.failures.push((
                    shown.to_path_buf(),
                    format!("cannot make a directory to unpack it in the store: {e}"),
                ));
                return 0;
            }
        };
        self.unpacked.push(Unpacked {
            shown: shown.to_path_buf(),
            dir: dir.clone(),
        });
        let mut sink = Sink {
            dir: Some(&dir),
            depth,
            nested: Vec::new(),
            warnings: Vec::new(),
            members: &self.members,
        };
        let (mut used, mut limit) = (0, 0);
        let read = match crate::load::open_nonblocking(path).and_then(Source::new) {
            Ok(source) => {
                let budget = Budget::for_archive(source.len()).at_most(cap);
                let read = read(source, kind, &budget, &mut sink, self.threads);
                (used, limit) = (budget.used(), budget.limit);
                read
            }
            Err(e) => Err(ReadError::Open(e)),
        };
        let (nested, warnings) = (sink.nested, sink.warnings);
        // What the archives inside may unpack to: what is left of this one's budget.
        let mut left = limit.saturating_sub(used);
        self.warnings
            .extend(warnings.into_iter().map(|w| (shown.to_path_buf(), w)));
        if let Err(why) = read {
            self.failures.push((shown.to_path_buf(), why.to_string()));
        }
        for (member, kind) in nested {
            let inner_shown = PathBuf::from(format!(
                "{}!{}",
                shown.display(),
                member.strip_prefix(&dir).unwrap_or(&member).display()
            ));
            let spent = self.unpack_at(&member, &inner_shown, kind, depth + 1, left);
            left = left.saturating_sub(spent);
            used = used.saturating_add(spent);
            // The archive is read; only its members are dumped.
            let _ = std::fs::remove_file(&member);
        }
        used
    }

    /// A new directory for one archive's members, under the run's temporary directory.
    fn new_dir(&mut self) -> io::Result<PathBuf> {
        let temp = match &mut self.temp {
            Some(t) => t,
            none => {
                std::fs::create_dir_all(&self.store)?;
                // A killed run's members, which no one else will remove.
                leftovers::remove_stale(&self.store);
                leftovers::watch(&self.store);
                let temp = tempfile::Builder::new()
                    .prefix(&leftovers::prefix())
                    .tempdir_in(&self.store)?;
                none.insert(temp)
            }
        };
        let dir = temp.path().join(self.unpacked.len().to_string());
        std::fs::create_dir(&dir)?;
        Ok(dir)
    }
}

/// Reads every member of the archive `bytes` (of kind `kind`) as a store run would,
/// writing none: how many it would have taken, or why it stopped. For fuzzing.
#[cfg(feature = "fuzzing")]
pub(crate) fn read_members(source: Source, kind: Kind) -> (usize, Result<(), ReadError>) {
    let members = AtomicUsize::new(0);
    let mut sink = Sink::counting(&members);
    let budget = Budget::for_archive(source.len());
    let read = read(source, kind, &budget, &mut sink, 1);
    (members.into_inner(), read)
}

/// Why an archive is not read to its end: its reader's error.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("cannot read: {0}")]
    Open(#[source] io::Error),
    #[error(transparent)]
    Zip(#[from] zip::ZipError),
    #[error(transparent)]
    Tar(#[from] tar::TarError),
    #[error(transparent)]
    Deb(#[from] deb::DebError),
    #[error(transparent)]
    Rpm(#[from] rpm::RpmError),
    #[error(transparent)]
    Squashfs(#[from] squashfs::SquashfsError),
    #[error(transparent)]
    Cpio(#[from] cpio::CpioError),
}

/// Takes the members of the archive `source`, of kind `kind`, into `sink` (a ZIP's on
/// `threads` threads), within `budget`.
fn read(
    source: Source,
    kind: Kind,
    budget: &Budget,
    sink: &mut Sink,
    threads: usize,
) -> Result<(), ReadError> {
    match kind {
        Kind::Zip => Ok(zip::read(source, budget, sink, threads)?),
        Kind::Tar(packing) => Ok(tar::read(source, packing, budget, sink)?),
        Kind::Deb => Ok(deb::read(source, budget, sink)?),
        Kind::Rpm => Ok(rpm::read(source, budget, sink)?),
        Kind::Squashfs => Ok(squashfs::read(source, budget, sink)?),
        Kind::Cpio => Ok(cpio::read(
            Counted {
                inner: source,
                budget,
            },
            sink,
        )?),
    }
}

/// Where one archive's members go.
pub(crate) struct Sink<'u> {
    /// `None`: members are read, not written (fuzzing).
    dir: Option<&'u Path>,
    depth: u8,
    /// Archives among the members, written, to be unpacked after this one.
    nested: Vec<(PathBuf, Kind)>,
    warnings: Vec<Warning>,
    /// Members taken by the whole run.
    members: &'u AtomicUsize,
}

/// Whether a member's first bytes are those of a file a dump reads: an object file or
/// a PDB. Java class files share the universal Mach-O magic; their next word (the class
/// file's version, 45 and up) is no count of slices.
fn wanted(head: &[u8]) -> bool {
    if let [0xCA, 0xFE, 0xBA, 0xBE | 0xBF, a, b, c, d, ..] = *head {
        return (1..45).contains(&u32::from_be_bytes([a, b, c, d]));
    }
    crate::magic::looks_like_object(head) || crate::magic::starts_like_pdb(head)
}

/// Whether a member of kind `kind`, named `raw`, is an archive to follow. A compressed
/// stream is one only when its name says it is a tar (`.tar.gz`, `.tgz`, …): packages
/// hold gzip'd manuals and changelogs by the hundred.
fn is_nested_archive(kind: Kind, raw: &[u8]) -> bool {
    const TARS: [&[u8]; 9] = [
        b".tar.gz",
        b".tgz",
        b".tar.xz",
        b".txz",
        b".tar.zst",
        b".tzst",
        b".tar.bz2",
        b".tbz2",
        b".tbz",
    ];
    match kind {
        Kind::Zip
        | Kind::Deb
        | Kind::Rpm
        | Kind::Cpio
        | Kind::Squashfs
        | Kind::Tar(Packing::Plain) => true,
        Kind::Tar(_) => TARS
            .iter()
            .any(|suffix| raw.to_ascii_lowercase().ends_with(suffix)),
    }
}

/// How many bytes of a member are read to decide whether it is wanted.
const HEAD: usize = 512;

impl<'u> Sink<'u> {
    /// A sink that writes nothing and counts what it would take.
    #[cfg(any(test, feature = "fuzzing"))]
    fn counting(members: &'u AtomicUsize) -> Sink<'u> {
        Sink {
            dir: None,
            depth: 1,
            nested: Vec::new(),
            warnings: Vec::new(),
            members,
        }
    }

    /// A sink for another thread reading the same archive.
    fn fork(&self) -> Sink<'u> {
        Sink {
            dir: self.dir,
            depth: self.depth,
            nested: Vec::new(),
            warnings: Vec::new(),
            members: self.members,
        }
    }

    fn warn(&mut self, member: &str, why: impl std::fmt::Display) {
        self.warnings.push(
            Warning::new(WarningKind::Container, format!("{member}: {why}"))
                .on(crate::untrusted::name_for_output(member).into_owned()),
        );
    }

    /// Takes one regular-file member, named `raw` in the archive, whose bytes `data`
    /// reads: written under the archive's directory if a dump can use it, else read
    /// past. `Err` only when the archive cannot be read further (its budget is spent or
    /// its stream broken); a member that cannot be written is a warning.
    pub(crate) fn take(
        &mut self,
        raw: &[u8],
        data: &mut dyn Read,
        modified: Option<std::time::SystemTime>,
    ) -> io::Result<()> {
        let mut head = Vec::with_capacity(HEAD);
        data.take(HEAD as u64).read_to_end(&mut head)?;
        let nested = kind(&head).filter(|k| is_nested_archive(*k, raw));
        if !wanted(&head) && nested.is_none() {
            return Ok(());
        }
        let shown = String::from_utf8_lossy(raw);
        let rel = match member_path(raw) {
            Ok(rel) => rel,
            Err(why) => {
                self.warn(&shown, format!("not taken: its name {why}"));
                return Ok(());
            }
        };
        if nested.is_some() && self.depth >= MAX_DEPTH {
            self.warn(
                &shown,
                "not read: an archive inside an archive inside an archive",
            );
            return Ok(());
        }
        let taken = self.members.fetch_add(1, Ordering::Relaxed);
        if taken >= MAX_MEMBERS {
            if taken == MAX_MEMBERS {
                self.warn(
                    &shown,
                    format!("not taken, nor any member after it: the run's archives hold more than {MAX_MEMBERS} object files"),
                );
            }
            return Ok(());
        }
        let Some(dir) = self.dir else {
            io::copy(data, &mut io::sink())?;
            return Ok(());
        };
        let path = dir.join(&rel);
        match write_member(&path, &head, data, modified) {
            Ok(()) => {}
            Err(Written::Member(e)) => {
                self.warn(&shown, format!("cannot be written to unpack it: {e}"));
                return Ok(());
            }
            Err(Written::Archive(e)) => return Err(e),
        }
        if let Some(kind) = nested {
            self.nested.push((path, kind));
        }
        Ok(())
    }
}

impl Sink<'_> {
    /// Gives the member `also` the bytes of the member `taken`, as another name of the
    /// same file (a hard link in a cpio archive): linked to it if it was written, else
    /// nothing (no dump uses it).
    pub(crate) fn link(&mut self, taken: &[u8], also: &[u8]) {
        let (Ok(from), Ok(to)) = (member_path(taken), member_path(also)) else {
            let shown = String::from_utf8_lossy(also);
            self.warn(&shown, "not taken: its name or its link's is refused");
            return;
        };
        let Some(dir) = self.dir else {
            let _ = self
                .members
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                    (n < MAX_MEMBERS).then_some(n + 1)
                });
            return;
        };
        let from = dir.join(from);
        if !std::fs::symlink_metadata(&from).is_ok_and(|m| m.is_file()) {
            return;
        }
        if self.members.fetch_add(1, Ordering::Relaxed) >= MAX_MEMBERS {
            return;
        }
        let to = dir.join(to);
        let linked = to
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| match std::fs::remove_file(&to) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            })
            .and_then(|()| std::fs::hard_link(&from, &to));
        if let Err(e) = linked {
            let shown = String::from_utf8_lossy(also);
            self.warn(&shown, format!("cannot be written to unpack it: {e}"));
        }
    }
}

/// Why a member was not written: its own problem, or the archive's (a read failed).
enum Written {
    Member(io::Error),
    Archive(io::Error),
}

fn write_member(
    path: &Path,
    head: &[u8],
    data: &mut dyn Read,
    modified: Option<std::time::SystemTime>,
) -> Result<(), Written> {
    let create = || -> io::Result<std::fs::File> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        // A later member of the same name replaces an earlier one, as unpacking
        // the archive by hand would; never through a link (there are none: links
        // are not taken).
        std::fs::File::create(path)
    };
    let file = create().map_err(Written::Member)?;
    let mut out = io::BufWriter::with_capacity(1 << 20, file);
    let copied = out
        .write_all(head)
        .map_err(Written::Member)
        .and_then(|()| copy(data, &mut out));
    let done = copied.and_then(|()| {
        let file = out
            .into_inner()
            .map_err(|e| Written::Member(e.into_error()))?;
        if let Some(t) = modified {
            // Kept as a debug map's object file needs it (dsymutil compares it).
            let _ = file.set_modified(t);
        }
        Ok(())
    });
    if done.is_err() {
        let _ = std::fs::remove_file(path);
    }
    done
}

/// Copies `data` to `out`, telling a failed read (the archive's) from a failed write.
fn copy(data: &mut dyn Read, out: &mut dyn Write) -> Result<(), Written> {
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match data.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Written::Archive(e)),
        };
        out.write_all(&buf[..n]).map_err(Written::Member)?;
    }
}

/// A member's name as a path under its archive's directory: its components, with `.`
/// and empty ones dropped. Refused (why, in words): a name that climbs (`..`), is
/// absolute, holds a NUL or a control character, or names nothing.
pub(crate) fn member_path(raw: &[u8]) -> Result<PathBuf, &'static str> {
    let name = std::str::from_utf8(raw).map_err(|_| "is not UTF-8")?;
    if name.chars().any(char::is_control) {
        return Err("holds a control character");
    }
    if name.starts_with('/') || name.starts_with('\\') || name.get(1..2) == Some(":") {
        return Err("is an absolute path");
    }
    let mut path = PathBuf::new();
    // ZIP files made on Windows separate with `\`.
    for part in name.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => return Err("climbs out of the archive (..)"),
            part => path.push(part),
        }
    }
    let plain = path.components().all(|c| matches!(c, Component::Normal(_)));
    if path.as_os_str().is_empty() || !plain {
        return Err("names no file");
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_names() {
        assert_eq!(
            member_path(b"./usr/lib/libc.so.6").unwrap(),
            Path::new("usr/lib/libc.so.6")
        );
        assert_eq!(
            member_path(b"lib\\arm64-v8a\\libfoo.so").unwrap(),
            Path::new("lib/arm64-v8a/libfoo.so")
        );
        for bad in [
            &b"../../etc/passwd"[..],
            b"a/../../b",
            b"/etc/passwd",
            b"\\\\server\\share",
            b"C:\\evil.dll",
            b"a\0b",
            b"a\x1b[2Jb",
            b"./",
            b"",
            b"\xff\xfe",
        ] {
            assert!(member_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn kinds() {
        let mut tar = vec![0u8; 512];
        tar[257..262].copy_from_slice(b"ustar");
        assert_eq!(kind(&tar), Some(Kind::Tar(Packing::Plain)));
        assert_eq!(kind(b"PK\x03\x04...."), Some(Kind::Zip));
        assert_eq!(kind(b"!<arch>\ndebian-binary   "), Some(Kind::Deb));
        // A static library is no package.
        assert_eq!(kind(b"!<arch>\n/               "), None);
        assert_eq!(
            kind(&[0x28, 0xB5, 0x2F, 0xFD, 0]),
            Some(Kind::Tar(Packing::Zstd))
        );
        assert_eq!(kind(b"\x7fELF\x02\x01\x01"), None);
    }

    #[test]
    fn budget_is_spent_and_then_refuses() {
        let budget = Budget::for_archive(1);
        assert_eq!(budget.limit, MIN_BUDGET);
        assert!(budget.spend(MIN_BUDGET as usize).is_ok());
        let e = budget.spend(1).unwrap_err();
        assert!(e.to_string().contains("decompression bomb"), "{e}");
        assert_eq!(Budget::for_archive(10 << 20).limit, 1000 << 20);
        let inner = Budget::for_archive(10 << 20).at_most(5 << 20);
        assert_eq!(inner.limit, 5 << 20);
        inner.spend(3 << 20).unwrap();
        assert_eq!(inner.used(), 3 << 20);
    }
}
