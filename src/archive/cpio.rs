//! cpio archives in the `newc` form (`070701`, and `070702` with checksums): the payload
//! of an RPM package, and what `cpio -H newc` and the kernel's initramfs tools write.
//!
//! Hand-written: the `cpio` crate allocates a member's name at the length its header
//! claims and has no way to stop at the archive's budget, and the format is a 110-byte
//! header of hexadecimal fields, a name and the data, each padded to four bytes.

use std::collections::HashMap;
use std::io::{self, Read};
use std::time::{Duration, UNIX_EPOCH};

use super::Sink;

/// The longest member name read: Linux's `PATH_MAX`. A header claiming more is damage.
const MAX_NAME: u64 = 4096;

/// Hard-linked names waiting for the member that carries their bytes, at most: a package
/// links a few files under several names; an archive of millions of empty links is an
/// attack on the run's memory.
const MAX_WAITING_LINKS: usize = 4096;

const REGULAR: u32 = 0o100000;
const TYPE_MASK: u32 = 0o170000;

/// One member's header, as far as reading it needs.
struct Header {
    ino: u32,
    mode: u32,
    nlink: u32,
    mtime: u32,
    size: u32,
    dev: (u32, u32),
    name: Vec<u8>,
}

/// Why a cpio archive is not read to its end.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CpioError {
    #[error("not a readable cpio archive: {0}")]
    NotCpio(#[source] io::Error),
    #[error("cannot be read past its member {member}: {source}")]
    Past {
        member: usize,
        #[source]
        source: io::Error,
    },
    #[error(
        "holds more than {MAX_WAITING_LINKS} hard links waiting for their member's bytes: not read further"
    )]
    Links,
    /// A member's data; `name` as it may be shown.
    #[error("{name} (the member at byte {at} of the cpio archive): {source}")]
    Member {
        name: String,
        at: u64,
        #[source]
        source: io::Error,
    },
}

/// Takes the regular-file members of the `newc` cpio archive `stream`. A member that
/// has several names (hard links) is taken under each: `newc` writes its bytes with the
/// last name only, the others empty.
pub(super) fn read(stream: impl Read, sink: &mut Sink) -> Result<(), CpioError> {
    let mut archive = Reader { stream, at: 0 };
    // The earlier names of each hard-linked member, by (device, inode).
    let mut waiting: HashMap<(u32, u32, u32), Vec<Vec<u8>>> = HashMap::new();
    let mut waiting_count = 0usize;
    for n in 0usize.. {
        let header = archive.header().map_err(|source| match n {
            0 => CpioError::NotCpio(source),
            member => CpioError::Past { member, source },
        })?;
        let Some(header) = header else {
            return Ok(());
        };
        let key = (header.dev.0, header.dev.1, header.ino);
        let regular = header.mode & TYPE_MASK == REGULAR;
        if regular && header.size == 0 && header.nlink > 1 {
            if waiting_count >= MAX_WAITING_LINKS {
                return Err(CpioError::Links);
            }
            waiting_count += 1;
            waiting.entry(key).or_default().push(header.name);
            continue;
        }
        let at = archive.at;
        let mut data = archive.member(header.size);
        if regular {
            let modified = UNIX_EPOCH.checked_add(Duration::from_secs(header.mtime.into()));
            sink.take(&header.name, &mut data, modified)
                .map_err(|e| member_error(&header.name, at, e))?;
        }
        // What `take` did not read (a member no dump uses, or the rest of one).
        io::copy(&mut data, &mut io::sink()).map_err(|e| member_error(&header.name, at, e))?;
        archive
            .pad(header.size)
            .map_err(|e| member_error(&header.name, at, e))?;
        if regular && let Some(names) = waiting.remove(&key) {
            waiting_count -= names.len();
            for name in names {
                sink.link(&header.name, &name);
            }
        }
    }
    unreachable!("the loop ends by returning")
}

fn member_error(name: &[u8], at: u64, source: io::Error) -> CpioError {
    let shown = String::from_utf8_lossy(name).into_owned();
    CpioError::Member {
        name: crate::untrusted::name_for_output(&shown).to_string(),
        at,
        source,
    }
}

/// The archive's stream, and how far into it the reading is (for messages and padding).
struct Reader<R> {
    stream: R,
    at: u64,
}

/// Reads count towards `at`.
impl<R: Read> Read for Reader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.stream.read(buf)?;
        self.at += n as u64;
        Ok(n)
    }
}

impl<R: Read> Reader<R> {
    /// Reads past the padding that brings `len` bytes to a multiple of four.
    fn pad(&mut self, len: u32) -> io::Result<()> {
        let pad = (4 - (len % 4)) % 4;
        self.read_exact(&mut [0u8; 3][..pad as usize])
    }

    /// The next member's header and name, the name's padding read past; `None` at the
    /// trailer.
    fn header(&mut self) -> io::Result<Option<Header>> {
        let start = self.at;
        let mut raw = [0u8; 110];
        self.read_exact(&mut raw).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => io::Error::new(
                e.kind(),
                format!("the archive ends at byte {start} without its trailer: truncated?"),
            ),
            _ => e,
        })?;
        match &raw[..6] {
            b"070701" | b"070702" => {}
            b"070707" => return Err(bad(start, "an old (odc) cpio header, which is not read")),
            b"07070X" => {
                return Err(bad(
                    start,
                    "an RPM large-file (stripped) cpio header, which is not read",
                ));
            }
            _ => return Err(bad(start, "no cpio (newc) header")),
        }
        let field = |i: usize| -> io::Result<u32> {
            let text = &raw[6 + 8 * i..6 + 8 * (i + 1)];
            std::str::from_utf8(text)
                .ok()
                .and_then(|t| u32::from_str_radix(t, 16).ok())
                .ok_or_else(|| bad(start, "a header field that is not hexadecimal"))
        };
        let name_size = u64::from(field(11)?);
        if name_size == 0 || name_size > MAX_NAME {
            return Err(bad(
                start,
                &format!("a name of {name_size} bytes (1 to {MAX_NAME})"),
            ));
        }
        let mut name = vec![0u8; name_size as usize];
        self.read_exact(&mut name)?;
        if name.pop() != Some(0) {
            return Err(bad(start, "a name that does not end with NUL"));
        }
        // The header and name together are padded to four bytes.
        self.pad((110 + name_size) as u32 % 4)?;
        if name == b"TRAILER!!!" {
            return Ok(None);
        }
        Ok(Some(Header {
            ino: field(0)?,
            mode: field(1)?,
            nlink: field(4)?,
            mtime: field(5)?,
            size: field(6)?,
            dev: (field(7)?, field(8)?),
            name,
        }))
    }

    /// The next `size` bytes, as a member's data: ending early is an error.
    fn member(&mut self, size: u32) -> super::tar::Whole<io::Take<&mut Self>> {
        super::tar::Whole {
            inner: self.take(size.into()),
            left: size.into(),
        }
    }
}

fn bad(at: u64, what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("{what} at byte {at}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A `newc` member as `cpio -H newc` writes it.
    fn member(out: &mut Vec<u8>, name: &str, ino: u32, mode: u32, nlink: u32, data: &[u8]) {
        let fields = [ino, mode, 0, 0, nlink, 0, data.len() as u32, 0, 0, 0, 0];
        out.extend_from_slice(b"070701");
        for f in fields {
            out.extend_from_slice(format!("{f:08X}").as_bytes());
        }
        out.extend_from_slice(format!("{:08X}", name.len() + 1).as_bytes());
        out.extend_from_slice(b"00000000");
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
        out.extend_from_slice(data);
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
    }

    fn elf() -> Vec<u8> {
        let mut e = b"\x7fELF\x02\x01\x01".to_vec();
        e.resize(600, 0);
        e
    }

    fn taken(archive: &[u8]) -> (usize, Result<(), String>) {
        let members = AtomicUsize::new(0);
        let mut sink = Sink::counting(&members);
        // The words, as the run reports them; damage_is_named checks the types too.
        let read = read(archive, &mut sink).map_err(|e| e.to_string());
        (members.into_inner(), read)
    }

    #[test]
    fn members_links_and_trailer() {
        let mut a = Vec::new();
        member(&mut a, "./usr/bin", 1, 0o040755, 2, b"");
        member(&mut a, "./usr/bin/a", 2, 0o100755, 2, b"");
        member(&mut a, "./usr/bin/b", 2, 0o100755, 2, &elf());
        member(&mut a, "./usr/bin/link", 3, 0o120777, 1, b"b");
        member(&mut a, "./usr/share/doc", 4, 0o100644, 1, b"text");
        member(&mut a, "TRAILER!!!", 0, 0, 1, b"");
        // b, and a linked to it.
        assert_eq!(taken(&a), (2, Ok(())));
    }

    #[test]
    fn damage_is_named() {
        let mut a = Vec::new();
        member(&mut a, "./x", 2, 0o100755, 1, &elf());
        let (_, cut) = taken(&a[..a.len() - 10]);
        assert!(cut.unwrap_err().contains("truncated"));
        let (_, no_trailer) = taken(&a);
        assert!(no_trailer.unwrap_err().contains("without its trailer"));
        let counted = AtomicUsize::new(0);
        let typed = read(&a[..], &mut Sink::counting(&counted));
        assert!(
            matches!(typed, Err(CpioError::Past { member: 1, .. })),
            "{typed:?}"
        );
        let mut long = a.clone();
        long[94..102].copy_from_slice(b"7FFFFFFF");
        assert!(taken(&long).1.unwrap_err().contains("a name of"));
        let mut odc = b"070707".to_vec();
        odc.resize(110, b'0');
        let (_, odc) = taken(&odc);
        assert!(odc.unwrap_err().contains("odc"));
        let mut links = Vec::new();
        for i in 0..=MAX_WAITING_LINKS {
            member(&mut links, &format!("l{i}"), 9, 0o100644, 2, b"");
        }
        assert!(taken(&links).1.unwrap_err().contains("hard links"));
    }
}
