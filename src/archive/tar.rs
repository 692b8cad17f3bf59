//! Tar archives, plain or compressed with gzip, xz, zstd or bzip2 (all read by Rust
//! decoders: no C parser meets an archive's bytes).

use std::io::{self, Read};
use std::time::{Duration, UNIX_EPOCH};

use super::{Budget, Counted, Packing, Sink, Source};

/// The largest LZMA dictionary and zstd window accepted: `xz -9` uses 64 MiB, `zstd
/// --ultra -22` 128 MiB. A stream asking for more is refused rather than allowed to
/// allocate it.
const MAX_WINDOW: u64 = 128 << 20;

/// The memory an LZMA or xz decoder may take, in KiB: what [`MAX_WINDOW`] needs.
pub(super) const MEM_LIMIT_KB: u32 = (MAX_WINDOW >> 10) as u32 * 2;

/// Why a tar archive is not read to its end.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TarError {
    /// Its compression cannot be read from the start.
    #[error("not readable: {0}")]
    Packing(#[source] io::Error),
    #[error("holds no tar archive: it decompresses to nothing")]
    Nothing,
    #[error("not a readable tar archive: {0}")]
    NotTar(#[source] io::Error),
    #[error("cannot be read past its member {member}: {source}")]
    Past {
        member: usize,
        #[source]
        source: io::Error,
    },
    /// A member's data; `name` as it may be shown.
    #[error("{name}: {source}")]
    Member {
        name: String,
        #[source]
        source: io::Error,
    },
}

/// Takes the members of the tar archive `bytes`, compressed as `packing` says. Read as
/// a stream: a damaged or truncated archive ends the reading there, with the members
/// before it taken.
pub(super) fn read(
    source: Source,
    packing: Packing,
    budget: &Budget,
    sink: &mut Sink,
) -> Result<(), TarError> {
    let stream = decompressed(source, packing).map_err(TarError::Packing)?;
    let read = entries(
        Counted {
            inner: stream,
            budget,
        },
        sink,
    );
    // Even an empty tar archive is 1 KiB of zeros: a stream that gives nothing at all
    // holds no archive, and saying "0 dumped" of it would hide that.
    if read.is_ok() && budget.used() == 0 {
        return Err(TarError::Nothing);
    }
    read
}

/// The bytes of `source`, decompressed as `packing` says, by Rust decoders bounded in
/// the memory a stream may ask for.
pub(super) fn decompressed(source: Source, packing: Packing) -> io::Result<Box<dyn Read>> {
    let bytes = io::BufReader::with_capacity(1 << 20, source);
    Ok(match packing {
        Packing::Plain => Box::new(bytes),
        Packing::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(bytes)),
        Packing::Xz => Box::new(lzma_rust2::XzReader::new_mem_limit(
            bytes,
            true,
            MEM_LIMIT_KB,
        )),
        // Only RPM payloads of the 2000s (`lzma` in the header): no magic tells it.
        Packing::Lzma => Box::new(lzma_rust2::LzmaReader::new_mem_limit(
            bytes,
            MEM_LIMIT_KB,
            None,
        )?),
        Packing::Zstd => Box::new(zstd(bytes)),
        Packing::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(bytes)),
    })
}

fn entries(stream: impl Read, sink: &mut Sink) -> Result<(), TarError> {
    let mut archive = ::tar::Archive::new(stream);
    let entries = archive.entries().map_err(TarError::NotTar)?;
    for (n, entry) in entries.enumerate() {
        let mut entry = entry.map_err(|source| match n {
            0 => TarError::NotTar(source),
            member => TarError::Past { member, source },
        })?;
        let header = entry.header();
        // Links (hard or symbolic), directories, devices: only regular files' bytes
        // are in the archive.
        if !matches!(
            header.entry_type(),
            ::tar::EntryType::Regular | ::tar::EntryType::Continuous
        ) {
            continue;
        }
        let modified = header
            .mtime()
            .ok()
            .and_then(|s| UNIX_EPOCH.checked_add(Duration::from_secs(s)));
        let name = entry.path_bytes().into_owned();
        let mut data = Whole {
            left: header.size().unwrap_or(0),
            inner: &mut entry,
        };
        sink.take(&name, &mut data, modified).map_err(|source| {
            let shown = String::from_utf8_lossy(&name).into_owned();
            TarError::Member {
                name: crate::untrusted::name_for_output(&shown).to_string(),
                source,
            }
        })?;
    }
    Ok(())
}

/// A member's bytes, all of them: the stream ending before the size its header gives is
/// an error (a truncated archive), not a shorter member.
pub(super) struct Whole<R> {
    pub(super) inner: R,
    pub(super) left: u64,
}

impl<R: Read> Read for Whole<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && self.left > 0 && !buf.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "the archive ends {} bytes before this member does: truncated?",
                    self.left
                ),
            ));
        }
        self.left = self.left.saturating_sub(n as u64);
        Ok(n)
    }
}

/// The zstd stream `stream` decompressed, frame after frame, each within [`MAX_WINDOW`].
pub(super) fn zstd<R: io::BufRead>(stream: R) -> impl Read {
    Zstd {
        stream,
        frame: None,
    }
}

/// A zstd stream of any number of frames (`pzstd` and `zstd -T` with `--rsyncable`
/// write several), skippable frames passed over: ruzstd's frame decoder driven over one
/// stream, as its `StreamingDecoder` drives it over one frame.
struct Zstd<R: io::BufRead> {
    stream: R,
    /// The frame being read, if one is begun.
    frame: Option<ruzstd::decoding::FrameDecoder>,
}

impl<R: io::BufRead> Read for Zstd<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use ruzstd::decoding::BlockDecodingStrategy;
        use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if let Some(frame) = &mut self.frame {
                while frame.can_collect() == 0 && !frame.is_finished() {
                    frame
                        .decode_blocks(&mut self.stream, BlockDecodingStrategy::UptoBlocks(1))
                        .map_err(io::Error::other)?;
                }
                let n = frame.read(buf)?;
                if n > 0 {
                    return Ok(n);
                }
                self.frame = None;
            }
            if self.stream.fill_buf()?.is_empty() {
                return Ok(0);
            }
            let mut frame = ruzstd::decoding::FrameDecoder::new();
            frame.set_max_window_size(MAX_WINDOW);
            match frame.init(&mut self.stream) {
                Ok(()) => self.frame = Some(frame),
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                    length,
                    ..
                })) => {
                    // Its magic and length are read; its bytes are not. A frame that
                    // claims more than the stream holds is damage, not the end.
                    let skipped = &mut (&mut self.stream).take(u64::from(length));
                    let passed = io::copy(skipped, &mut io::sink())?;
                    if passed < u64::from(length) {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            format!(
                                "a zstd skippable frame claims {length} bytes, but the stream ends after {passed}: truncated or damaged"
                            ),
                        ));
                    }
                }
                Err(e) => return Err(io::Error::other(e)),
            }
        }
    }
}
