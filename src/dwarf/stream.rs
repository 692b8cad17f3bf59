//! `.debug_info` one unit at a time, so that it is never held whole: a mapped section is
//! sliced into its units, each released from memory once processed; a compressed one is
//! inflated as a stream on a thread of its own, overlapping with the workers, and each
//! unit is handed to them as soon as its last byte arrives. A byte budget bounds what is
//! in flight. Results come back in unit order, so the output does not depend on
//! scheduling.

use std::borrow::Cow;
use std::sync::{Condvar, Mutex, mpsc};

use gimli::RunTimeEndian;
use rayon::prelude::*;

use crate::error::{Warning, WarningKind, Warnings};
use crate::load::{InflateError, Input, SectionBytes, SectionStream};

/// At most this many bytes of inflated units wait for or sit in the workers (one unit
/// is always let through, however large).
const IN_FLIGHT_BUDGET: usize = 64 << 20;

/// One unit's bytes, header included.
pub(crate) struct UnitChunk<'a> {
    /// Position in `.debug_info`.
    pub index: usize,
    /// Offset in `.debug_info`.
    pub offset: usize,
    pub data: Cow<'a, [u8]>,
}

/// Where a unit is, for a second pass that wants some units again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UnitSpan {
    pub offset: usize,
    pub len: usize,
}

/// What to do with the units of a section.
pub(crate) struct Visit<'f, T> {
    pub endian: RunTimeEndian,
    /// Which units (by index) to hand to `work`; the others are only stepped over.
    pub want: &'f (dyn Fn(usize) -> bool + Sync),
    pub work: &'f (dyn Fn(UnitChunk<'_>) -> T + Sync),
}

/// Runs `visit.work` on every unit that `visit.want` accepts, in parallel, and returns
/// the results in unit order, with every unit's span. A damaged unit length ends the walk
/// with a warning: nothing after it can be found.
pub(crate) fn map_units<T: Send>(
    section: SectionBytes<'_>,
    input: &Input,
    visit: &Visit<'_, T>,
    warnings: &mut Warnings,
) -> (Vec<T>, Vec<UnitSpan>) {
    match section {
        SectionBytes::Whole(data) => map_slice(&data, input, visit, warnings),
        SectionBytes::Stream(stream) => {
            let size = stream.size;
            map_stream(stream, size, visit, warnings)
        }
    }
}

fn map_slice<T: Send>(
    data: &[u8],
    input: &Input,
    visit: &Visit<'_, T>,
    warnings: &mut Warnings,
) -> (Vec<T>, Vec<UnitSpan>) {
    let Visit { endian, want, work } = *visit;
    let mut spans = Vec::new();
    let mut offset = 0usize;
    while offset < data.len() {
        let rest = &data[offset..];
        match unit_length(rest, endian, rest.len() as u64) {
            Ok(len) => {
                spans.push(UnitSpan { offset, len });
                offset += len;
            }
            Err(e) => {
                warnings.add(damaged_length(spans.len(), offset, e));
                break;
            }
        }
    }
    let results = spans
        .par_iter()
        .enumerate()
        .filter(|(i, _)| want(*i))
        .map(|(index, s)| {
            let bytes = &data[s.offset..s.offset + s.len];
            let out = work(UnitChunk {
                index,
                offset: s.offset,
                data: Cow::Borrowed(bytes),
            });
            // Parsed: its pages can go (a mapped section only; see `Input::release`).
            input.release(bytes);
            out
        })
        .collect();
    (results, spans)
}

/// Where a stream's bytes come from: an inflater, or (in tests) a slice.
trait Source {
    /// Appends the next `n` bytes to `out`, or fewer where the stream ends; returns how
    /// many.
    fn append(&mut self, out: &mut Vec<u8>, n: usize) -> Result<usize, InflateError>;
}

impl Source for Box<SectionStream<'_>> {
    fn append(&mut self, out: &mut Vec<u8>, n: usize) -> Result<usize, InflateError> {
        SectionStream::append(self, out, n)
    }
}

#[cfg(test)]
impl Source for &[u8] {
    fn append(&mut self, out: &mut Vec<u8>, n: usize) -> Result<usize, InflateError> {
        let k = n.min(self.len());
        out.extend_from_slice(&self[..k]);
        *self = &self[k..];
        Ok(k)
    }
}

fn map_stream<T: Send>(
    mut stream: impl Source + Send,
    size: u64,
    visit: &Visit<'_, T>,
    warnings: &mut Warnings,
) -> (Vec<T>, Vec<UnitSpan>) {
    let Visit { endian, want, work } = *visit;
    let budget = Budget::default();
    let (tx, rx) = mpsc::channel::<UnitChunk<'static>>();
    let (mut results, (spans, w)) = std::thread::scope(|scope| {
        let producer = scope.spawn(|| {
            let mut spans = Vec::new();
            let mut w = Warnings::default();
            let mut offset = 0u64;
            while offset < size {
                match read_unit(&mut stream, endian, size - offset) {
                    Ok(None) => break,
                    Ok(Some(data)) => {
                        let index = spans.len();
                        spans.push(UnitSpan {
                            offset: offset as usize,
                            len: data.len(),
                        });
                        offset += data.len() as u64;
                        if want(index) {
                            budget.acquire(data.len());
                            let chunk = UnitChunk {
                                index,
                                offset: spans[index].offset,
                                data: Cow::Owned(data),
                            };
                            if tx.send(chunk).is_err() {
                                break;
                            }
                        }
                    }
                    Err(e) => {
                        w.add(damaged_length(spans.len(), offset as usize, e));
                        break;
                    }
                }
            }
            drop(tx);
            (spans, w)
        });
        let results = consume(&rx, |chunk| {
            let len = chunk.data.len();
            let out = work(chunk);
            budget.release(len);
            out
        });
        // The producer never panics: its reads are bounded and checked.
        let done = producer.join().unwrap_or_default();
        (results, done)
    });
    warnings.extend(w);
    // Workers finish in any order; unit order makes the output independent of that.
    results.sort_unstable_by_key(|r| r.0);
    (results.into_iter().map(|r| r.1).collect(), spans)
}

/// `work` on every unit `rx` brings, on the pool, with each result beside its unit's
/// index, in no particular order.
///
/// Each unit is spawned as a job. While the next unit has not come, the thread that
/// calls runs the jobs it spawned, and it waits for the inflater only when none is
/// left; the other workers never wait for it, and are free for other work.
/// `par_bridge` over the channel had every worker wait on its lock while one waited for
/// the inflater, so that a tree dump, with another module's work queued, left a core
/// idle whenever a `.debug_info` inflated slower than its units were read.
fn consume<T: Send>(
    rx: &mpsc::Receiver<UnitChunk<'static>>,
    work: impl Fn(UnitChunk<'static>) -> T + Sync,
) -> Vec<(usize, T)> {
    let results = Mutex::new(Vec::new());
    rayon::in_place_scope(|scope| {
        let (results, work) = (&results, &work);
        loop {
            let chunk = match rx.try_recv() {
                Ok(chunk) => chunk,
                Err(mpsc::TryRecvError::Disconnected) => break,
                // Only this thread's own jobs: another dump's whole job, taken here,
                // would hold this one's units until it ended.
                Err(mpsc::TryRecvError::Empty)
                    if rayon::yield_local() == Some(rayon::Yield::Executed) =>
                {
                    continue;
                }
                Err(mpsc::TryRecvError::Empty) => match rx.recv() {
                    Ok(chunk) => chunk,
                    Err(mpsc::RecvError) => break,
                },
            };
            scope.spawn(move |_| {
                let index = chunk.index;
                let out = work(chunk);
                let mut results = results.lock().unwrap_or_else(|e| e.into_inner());
                results.push((index, out));
            });
        }
    });
    results.into_inner().unwrap_or_else(|e| e.into_inner())
}

fn damaged_length(good: usize, offset: usize, e: UnitError) -> Warning {
    let why = format!(
        ".debug_info: unit header at {offset:#x}, after {good} good units: {e}; later units are skipped"
    );
    Warning::new(WarningKind::Dwarf, why)
        .on(".debug_info")
        .at(offset as u64)
}

/// The length of the unit at the start of `data`, its length field included, checked
/// against `left`, the bytes the section has from there.
/// Why the next unit of `.debug_info` cannot be had: its length field, or the stream
/// it is read from. Where: the offset the caller names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum UnitError {
    #[error("the section ends inside a unit length")]
    ShortLength,
    #[error("reserved unit length {0:#x}")]
    Reserved(u64),
    #[error("unit length {0:#x} runs past the end of the section")]
    PastEnd(u64),
    #[error("unit length 0")]
    Zero,
    #[error("unit length {0:#x} is too large")]
    TooLarge(u64),
    #[error("the section ends inside a unit")]
    Truncated,
    #[error(transparent)]
    Inflate(#[from] InflateError),
}

fn unit_length(data: &[u8], endian: RunTimeEndian, left: u64) -> Result<usize, UnitError> {
    let word = |b: &[u8]| -> Option<u64> {
        Some(match (b.len(), endian) {
            (4, RunTimeEndian::Little) => u64::from(u32::from_le_bytes(b.try_into().ok()?)),
            (4, RunTimeEndian::Big) => u64::from(u32::from_be_bytes(b.try_into().ok()?)),
            (8, RunTimeEndian::Little) => u64::from_le_bytes(b.try_into().ok()?),
            (8, RunTimeEndian::Big) => u64::from_be_bytes(b.try_into().ok()?),
            _ => return None,
        })
    };
    let short = UnitError::ShortLength;
    let first = word(data.get(..4).ok_or(short)?).ok_or(short)?;
    let (field, length) = match first {
        0xffff_ffff => (12, word(data.get(4..12).ok_or(short)?).ok_or(short)?),
        0xffff_fff0..=0xffff_fffe => return Err(UnitError::Reserved(first)),
        n => (4, n),
    };
    let total = length
        .checked_add(field)
        .filter(|&t| t <= left)
        .ok_or(UnitError::PastEnd(length))?;
    if length == 0 {
        return Err(UnitError::Zero);
    }
    usize::try_from(total).map_err(|_| UnitError::TooLarge(length))
}

/// Reads the next unit of a stream; `None` at the end of the stream.
fn read_unit(
    stream: &mut impl Source,
    endian: RunTimeEndian,
    left: u64,
) -> Result<Option<Vec<u8>>, UnitError> {
    let mut head = Vec::with_capacity(12);
    if stream.append(&mut head, 4)? == 0 {
        return Ok(None);
    }
    if head[..] == [0xff; 4] {
        stream.append(&mut head, 8)?;
    }
    let total = unit_length(&head, endian, left)?;
    // Sized once, and filled by as few reads as the inflater needs: each read's output
    // is also copied into its 32 KB window, so small reads (as `read_to_end` makes)
    // copy every byte a second time, and growing the vector copied multi-MB units
    // several times over. The length was checked against what the section header
    // claims, which `load` bounds by the file's size, so a damaged length cannot ask for
    // more than that.
    let mut data = Vec::with_capacity(total);
    data.extend_from_slice(&head);
    let rest = total - head.len();
    if stream.append(&mut data, rest)? != rest {
        return Err(UnitError::Truncated);
    }
    Ok(Some(data))
}

/// Bytes in flight between the inflating thread and the workers.
#[derive(Default)]
struct Budget {
    used: Mutex<usize>,
    freed: Condvar,
}

impl Budget {
    fn acquire(&self, n: usize) {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        while *used > 0 && *used + n > IN_FLIGHT_BUDGET {
            used = self.freed.wait(used).unwrap_or_else(|e| e.into_inner());
        }
        *used += n;
    }

    fn release(&self, n: usize) {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        *used = used.saturating_sub(n);
        self.freed.notify_all();
    }
}

#[cfg(any(feature = "fuzzing", test))]
/// Splits `data`, the bytes of a `.debug_info` section, into units the way a
/// zlib-compressed section is: compressed here, then inflated as a stream and cut as it
/// arrives. For the fuzz targets: returns each unit's offset and length.
pub(crate) fn split_streamed(data: &[u8]) -> Vec<(usize, usize)> {
    use std::io::Write as _;
    let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    // Writing to a Vec cannot fail.
    let _ = zlib.write_all(data);
    let compressed = zlib.finish().unwrap_or_default();
    let input = Input::from_bytes("<fuzz>".into(), compressed);
    let stream = crate::load::SectionStream::zlib(&input, input.bytes(), data.len() as u64);
    let visit = Visit {
        endian: RunTimeEndian::Little,
        want: &|_| true,
        work: &|chunk: UnitChunk<'_>| (chunk.offset, chunk.data.len()),
    };
    let mut warnings = Warnings::default();
    map_units(
        SectionBytes::Stream(Box::new(stream)),
        &input,
        &visit,
        &mut warnings,
    )
    .0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    fn units(lengths: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        for &l in lengths {
            out.extend(l.to_le_bytes());
            out.extend(std::iter::repeat_n(0xAB, l as usize));
        }
        out
    }

    #[test]
    fn lengths_are_checked() {
        let le = RunTimeEndian::Little;
        assert_eq!(unit_length(&units(&[7]), le, 11), Ok(11));
        assert!(unit_length(&units(&[7]), le, 10).is_err());
        assert!(unit_length(&[0xf0, 0xff, 0xff, 0xff], le, 100).is_err());
        assert!(unit_length(&[1, 0], le, 100).is_err());
        let mut dwarf64 = vec![0xff; 4];
        dwarf64.extend(3u64.to_le_bytes());
        assert_eq!(unit_length(&dwarf64, le, 15), Ok(15));
        assert_eq!(unit_length(&[0, 0, 0, 2], RunTimeEndian::Big, 6), Ok(6));
    }

    #[test]
    fn a_stream_and_a_slice_give_the_same_units_in_order() {
        let data = units(&[5, 300, 1, 40]);
        let input = Input::from_bytes("test".into(), Vec::new());
        let work = |c: UnitChunk<'_>| (c.index, c.offset, c.data.len());
        let mut w = Warnings::default();
        let endian = RunTimeEndian::Little;
        let all = Visit {
            endian,
            want: &|_| true,
            work: &work,
        };
        let (a, spans) = map_slice(&data, &input, &all, &mut w);
        let (b, _) = map_stream(&data[..], data.len() as u64, &all, &mut w);
        assert_eq!(a, vec![(0, 0, 9), (1, 9, 304), (2, 313, 5), (3, 318, 44)]);
        assert_eq!(a, b);
        assert_eq!(spans.len(), 4);
        let odd = Visit {
            endian,
            want: &|i| i % 2 == 1,
            work: &work,
        };
        let (odd, _) = map_stream(&data[..], data.len() as u64, &odd, &mut w);
        assert_eq!(odd, vec![(1, 9, 304), (3, 318, 44)]);
        assert!(w.is_empty());
    }

    #[test]
    fn a_truncated_stream_keeps_the_units_before_the_damage() {
        let data = units(&[5, 300]);
        let mut w = Warnings::default();
        let work = |c: UnitChunk<'_>| c.index;
        let visit = Visit {
            endian: RunTimeEndian::Little,
            want: &|_| true,
            work: &work,
        };
        let (got, _) = map_stream(&data[..100], 400, &visit, &mut w);
        assert_eq!(got, vec![0]);
        let first = w.iter().next().expect("a warning");
        assert_eq!(
            (first.kind, first.offset),
            (WarningKind::Dwarf, Some(9)),
            "{w:?}"
        );
        assert!(first.message.contains("after 1 good units"), "{w:?}");
    }

    /// Units from a slice that, at byte `gate` (a unit's start), hands a job to `pool`
    /// and waits for it to run, or for `wait` to pass.
    struct Gated<'a> {
        rest: &'a [u8],
        given: usize,
        gate: usize,
        pool: &'a rayon::ThreadPool,
        wait: Duration,
        ran: Arc<AtomicBool>,
    }

    impl Source for Gated<'_> {
        fn append(&mut self, out: &mut Vec<u8>, n: usize) -> Result<usize, InflateError> {
            if self.given == self.gate {
                let (tx, rx) = mpsc::channel();
                let ran = self.ran.clone();
                self.pool.spawn(move || {
                    ran.store(true, Ordering::SeqCst);
                    let _ = tx.send(());
                });
                let _ = rx.recv_timeout(self.wait);
            }
            let k = self.rest.append(out, n)?;
            self.given += k;
            Ok(k)
        }
    }

    fn pool(threads: usize) -> rayon::ThreadPool {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads);
        pool.build().expect("a thread pool")
    }

    #[test]
    fn waiting_for_the_inflater_leaves_the_other_workers_free() {
        // Two workers: while the stream waits (here, for a job of another dump), the
        // worker that is not reading it must be free to run that job. Had every worker
        // waited on the stream, the job would run only after `wait`.
        let pool = pool(2);
        let data = units(&[5, 300, 1, 40, 7, 7]);
        let ran = Arc::new(AtomicBool::new(false));
        let wait = Duration::from_secs(20);
        let work = |c: UnitChunk<'_>| (c.index, c.data.len());
        let visit = Visit {
            endian: RunTimeEndian::Little,
            want: &|_| true,
            work: &work,
        };
        let started = Instant::now();
        let (got, _) = pool.install(|| {
            let gated = Gated {
                rest: &data,
                given: 0,
                gate: 9 + 304,
                pool: &pool,
                wait,
                ran: ran.clone(),
            };
            map_stream(gated, data.len() as u64, &visit, &mut Warnings::default())
        });
        assert_eq!(
            got,
            vec![(0, 9), (1, 304), (2, 5), (3, 44), (4, 11), (5, 11)]
        );
        assert!(ran.load(Ordering::SeqCst));
        assert!(
            started.elapsed() < wait,
            "the other dump's job waited for the stream"
        );
    }

    #[test]
    fn every_unit_is_read_on_pools_of_one_to_three_workers() {
        let lengths: Vec<u32> = (0..2000).map(|i| 1 + (i * 7919) % 500).collect();
        let data = units(&lengths);
        let work = |c: UnitChunk<'_>| (c.index, c.offset, c.data.len());
        let visit = Visit {
            endian: RunTimeEndian::Little,
            want: &|_| true,
            work: &work,
        };
        let input = Input::from_bytes("test".into(), Vec::new());
        let mut w = Warnings::default();
        let (whole, _) = map_slice(&data, &input, &visit, &mut w);
        for threads in [1, 2, 3] {
            let pool = pool(threads);
            let (streamed, spans) = pool.install(|| {
                map_stream(
                    &data[..],
                    data.len() as u64,
                    &visit,
                    &mut Warnings::default(),
                )
            });
            assert_eq!(streamed, whole, "{threads} threads");
            assert_eq!(spans.len(), lengths.len());
        }
        assert!(w.is_empty());
    }
}
