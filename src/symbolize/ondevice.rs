//! The on-device stack trace (docs/FORMAT.md; the format Memfault's Linux SDK
//! writes when it unwinds a crashed process on the device): threads of program
//! counters and the modules they fall in, each with its build ID, path, address
//! range and the two offsets that undo ASLR. A PC's place in its ELF is
//! `pc − runtime_offset + compiled_offset`, as the document says.

use serde_json::Value;

use super::input::{Base, Pc};

/// A module of the trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Module {
    /// The module's path on the device.
    pub path: String,
    /// Its GNU build ID, in hex, when the trace gives one.
    pub build_id: Option<String>,
    /// The start of its mapped range.
    pub start: u64,
    /// The end of its mapped range (exclusive).
    pub end: u64,
    /// Where it was loaded (`runtime_offset`).
    pub runtime_offset: u64,
    /// The ELF address the mapping starts at (`compiled_offset`).
    pub compiled_offset: u64,
}

/// One PC of a thread, placed in its module (None when no module's range holds it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The PC as the trace gives it.
    pub pc: u64,
    /// The module it falls in, by index.
    pub module: Option<usize>,
    /// Its place in the module: `pc − runtime_offset + compiled_offset`.
    pub offset: u64,
    /// What the offset counts from.
    pub base: Base,
    /// Where the thread stopped, or a return address.
    pub kind: Pc,
}

/// The trace: its modules, and each thread's PCs, innermost first (placed by
/// [`Trace::frame`] as they are read: a PC costs 8 bytes here).
#[derive(Debug, Default)]
pub struct Trace {
    /// The modules mapped.
    pub modules: Vec<Module>,
    /// Each thread's PCs, where it stopped first.
    pub threads: Vec<Vec<u64>>,
    /// Modules left out, and why.
    pub warnings: Vec<String>,
    placing: Placing,
}

impl Trace {
    /// The `n`th PC of a thread placed in its module.
    pub fn frame(&self, pc: u64, n: usize) -> Frame {
        place(&self.modules, self.placing.find(pc), pc, n == 0)
    }
}

/// The longest module path taken: Linux's own limit is 4,096 bytes, and real paths in
/// `/proc/PID/maps` are a few dozen; a longer one would be written again for every PC
/// that falls in the module.
pub const MAX_PATH: usize = 1024;

/// How a module is named on each of its frames' lines: its path's last component (a
/// file name, at most 255 bytes on every file system).
pub fn display_name(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    let mut end = name.len().min(255);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// What is wrong with an on-device trace document.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// It is not JSON.
    #[error("not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// It has no `symbols` or no `threads` array.
    #[error("no \"{0}\" array")]
    NoArray(&'static str),
    /// An entry of `symbols` is not a module.
    #[error("symbols[{index}]: {problem}")]
    Module {
        /// Its place in the array.
        index: usize,
        /// What is wrong with it.
        problem: ValueError,
    },
    /// An entry of `threads` has no PCs, or a PC that is not a number.
    #[error(transparent)]
    Thread(ThreadError),
}

/// What is wrong with a value of a trace's module or PC.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// A field the module needs is not there (its name, dotted within its object).
    #[error("no \"{0}\"")]
    Missing(&'static str),
    #[error("\"path\" is not a string")]
    PathNotString,
    #[error("pc_range ends ({end:#x}) before it starts ({start:#x})")]
    Backwards { start: u64, end: u64 },
    #[error("not a hexadecimal string")]
    NotString,
    #[error("{0:?} is not a 64-bit hexadecimal number")]
    TooLong(String),
    #[error("{0:?} is not hexadecimal")]
    NotHex(String),
}

/// What is wrong with a thread of a trace, by its place in `threads`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThreadError {
    #[error("threads[{0}]: no \"pcs\" array")]
    NoPcs(usize),
    #[error("threads[{thread}].pcs[{index}]: {problem}")]
    Pc {
        thread: usize,
        index: usize,
        problem: ValueError,
    },
}

/// Reads a trace; Err says what is wrong with the document. The PCs are read straight
/// into numbers, not into a JSON tree: a trace of millions of PCs costs their count in
/// words.
pub fn parse(text: &str) -> Result<Trace, TraceError> {
    let raw: RawDoc = serde_json::from_str::<RawDocSeed>(text)
        .map_err(TraceError::NotJson)?
        .0;
    let symbols = raw.symbols.ok_or(TraceError::NoArray("symbols"))?;
    let threads = raw.threads.ok_or(TraceError::NoArray("threads"))?;
    let mut trace = Trace::default();
    for (index, s) in symbols.iter().enumerate() {
        let m = module(s).map_err(|problem| TraceError::Module { index, problem })?;
        let i = index;
        if m.path.len() > MAX_PATH {
            trace.warnings.push(format!(
                "symbols[{i}]: a path of {} bytes, longer than any real one ({MAX_PATH}): \
                 its PCs are not placed",
                m.path.len()
            ));
            continue;
        }
        trace.modules.push(m);
    }
    trace.placing = Placing::new(&trace.modules, &mut trace.warnings);
    for thread in threads {
        trace.threads.push(thread.map_err(TraceError::Thread)?);
    }
    Ok(trace)
}

/// The document as read: its modules as JSON (few), its threads' PCs as numbers, or
/// what is wrong with them.
struct RawDoc {
    symbols: Option<Vec<Value>>,
    threads: Option<Vec<Result<Vec<u64>, ThreadError>>>,
}

/// Reads a [`RawDoc`] (serde's visitors: the PCs never become JSON values).
struct RawDocSeed(RawDoc);

impl<'de> serde::Deserialize<'de> for RawDocSeed {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(DocVisitor).map(RawDocSeed)
    }
}

struct DocVisitor;

impl<'de> serde::de::Visitor<'de> for DocVisitor {
    type Value = RawDoc;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an on-device stack trace (a JSON object)")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<RawDoc, A::Error> {
        let mut doc = RawDoc {
            symbols: None,
            threads: None,
        };
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "symbols" => doc.symbols = map.next_value::<Option<Vec<Value>>>()?,
                "threads" => doc.threads = map.next_value_seed(Threads)?,
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(doc)
    }
}

/// The `threads` array: each thread's PCs, or what is wrong with them.
struct Threads;

impl<'de> serde::de::DeserializeSeed<'de> for Threads {
    type Value = Option<Vec<Result<Vec<u64>, ThreadError>>>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Threads {
    type Value = Option<Vec<Result<Vec<u64>, ThreadError>>>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of threads")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut threads = Vec::new();
        while let Some(t) = seq.next_element_seed(Thread(threads.len()))? {
            threads.push(t);
        }
        Ok(Some(threads))
    }

    // Anything else is not an array of threads: said as such.
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(None)
    }
}

/// Thread number `.0`: an object whose `pcs` array is read.
struct Thread(usize);

impl<'de> serde::de::DeserializeSeed<'de> for Thread {
    type Value = Result<Vec<u64>, ThreadError>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Thread {
    type Value = Result<Vec<u64>, ThreadError>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a thread (an object with a \"pcs\" array)")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let t = self.0;
        let mut pcs = Err(ThreadError::NoPcs(t));
        while let Some(key) = map.next_key::<String>()? {
            if key == "pcs" {
                pcs = map.next_value_seed(Pcs(t))?;
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(pcs)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(Err(ThreadError::NoPcs(self.0)))
    }
}

/// Thread `.0`'s `pcs`: each a hexadecimal string (or a number).
struct Pcs(usize);

impl<'de> serde::de::DeserializeSeed<'de> for Pcs {
    type Value = Result<Vec<u64>, ThreadError>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Pcs {
    type Value = Result<Vec<u64>, ThreadError>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of PCs")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut pcs = Vec::new();
        let mut wrong = None;
        while let Some(v) = seq.next_element::<Value>()? {
            match hex_value(&v) {
                Ok(pc) => pcs.push(pc),
                Err(problem) if wrong.is_none() => {
                    wrong = Some(ThreadError::Pc {
                        thread: self.0,
                        index: pcs.len(),
                        problem,
                    });
                }
                Err(_) => {}
            }
        }
        Ok(match wrong {
            Some(e) => Err(e),
            None => Ok(pcs),
        })
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(Err(ThreadError::NoPcs(self.0)))
    }
}

/// The modules' ranges, sorted by start, for placing each PC by binary search (a
/// trace may name many modules and many PCs). Ranges that overlap an earlier module's
/// are left out: a process's mappings never overlap, and which module a PC in both
/// would be is not to be guessed.
#[derive(Debug, Default)]
struct Placing {
    /// (start, end, module index), sorted by start, disjoint.
    ranges: Vec<(u64, u64, usize)>,
}

impl Placing {
    fn new(modules: &[Module], warnings: &mut Vec<String>) -> Placing {
        let mut ranges: Vec<(u64, u64, usize)> = modules
            .iter()
            .enumerate()
            .filter(|(_, m)| m.start < m.end)
            .map(|(i, m)| (m.start, m.end, i))
            .collect();
        ranges.sort_unstable();
        let mut kept: Vec<(u64, u64, usize)> = Vec::with_capacity(ranges.len());
        let mut overlapping = 0usize;
        for r in ranges {
            match kept.last() {
                Some(last) if r.0 < last.1 => overlapping += 1,
                _ => kept.push(r),
            }
        }
        if overlapping > 0 {
            warnings.push(format!(
                "{overlapping} module(s) whose pc_range overlaps another's: their PCs are \
                 not placed"
            ));
        }
        Placing { ranges: kept }
    }

    fn find(&self, pc: u64) -> Option<usize> {
        let i = self.ranges.partition_point(|r| r.0 <= pc).checked_sub(1)?;
        let (_, end, module) = self.ranges[i];
        (pc < end).then_some(module)
    }
}

fn module(s: &Value) -> Result<Module, ValueError> {
    let field = |name: &'static str| s.get(name).ok_or(ValueError::Missing(name));
    let range = field("pc_range")?;
    let start = hex_value(
        range
            .get("start")
            .ok_or(ValueError::Missing("pc_range.start"))?,
    )?;
    let end = hex_value(
        range
            .get("end")
            .ok_or(ValueError::Missing("pc_range.end"))?,
    )?;
    if end < start {
        return Err(ValueError::Backwards { start, end });
    }
    let path = field("path")?
        .as_str()
        .ok_or(ValueError::PathNotString)?
        .to_string();
    let build_id = s
        .get("build_id")
        .and_then(Value::as_str)
        .filter(|id| {
            !id.is_empty()
                && id.len().is_multiple_of(2)
                && id.bytes().all(|b| b.is_ascii_hexdigit())
        })
        .map(str::to_ascii_lowercase);
    Ok(Module {
        path,
        build_id,
        start,
        end,
        runtime_offset: hex_value(field("runtime_offset")?)?,
        compiled_offset: hex_value(field("compiled_offset")?)?,
    })
}

/// `pc` placed in `module` (the one whose range holds it): its ELF address there. The
/// first PC of a thread is where it stopped; the others are return addresses.
fn place(modules: &[Module], module: Option<usize>, pc: u64, first: bool) -> Frame {
    let offset = module.map_or(0, |i| {
        let m = &modules[i];
        pc.wrapping_sub(m.runtime_offset)
            .wrapping_add(m.compiled_offset)
    });
    Frame {
        pc,
        module,
        offset,
        base: Base::Vaddr,
        kind: if first { Pc::Exact } else { Pc::Return },
    }
}

/// `"0x55ea82cc4000"` (or a plain number).
fn hex_value(v: &Value) -> Result<u64, ValueError> {
    if let Some(n) = v.as_u64() {
        return Ok(n);
    }
    let s = v.as_str().ok_or(ValueError::NotString)?;
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if digits.is_empty() || digits.len() > 16 {
        return Err(ValueError::TooLong(s.to_string()));
    }
    u64::from_str_radix(digits, 16).map_err(|_| ValueError::NotHex(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/FORMAT.md's example in full (Memfault's), its elided PCs left out.
    const EXAMPLE: &str = r#"{
      "version": "1",
      "signal": "SIGSEGV",
      "cmdline": "memfaultctl\u0000trigger-coredump\u0000",
      "symbols": [
        {
          "pc_range": { "start": "0x55ea82cc4000", "end": "0x55ea839d3000" },
          "build_id": "4dfbaf904988c2cf8277f93d7adbf183884f8ed0",
          "compiled_offset": "0x1bd000",
          "runtime_offset": "0x55ea82cc4000",
          "path": "/home/blake/memfaultd/target/debug/memfaultd"
        },
        {
          "pc_range": { "start": "0x789a8e828000", "end": "0x789a8e9bd000" },
          "build_id": "d5197096f709801829b118af1b7cf6631efa2dcd",
          "compiled_offset": "0x28000",
          "runtime_offset": "0x789a8e828000",
          "path": "/usr/lib/x86_64-linux-gnu/libc.so.6"
        }
      ],
      "threads": [
        { "active": true,
          "pcs": ["0x55ea82cff77c", "0x55ea82cff4a7", "0x789a8e829000", "0x10"] }
      ]
    }"#;

    #[test]
    fn pcs_are_placed_as_the_document_computes() {
        let t = parse(EXAMPLE).unwrap();
        assert_eq!(t.modules.len(), 2);
        let f: Vec<Frame> = (t.threads[0].iter().enumerate())
            .map(|(n, &pc)| t.frame(pc, n))
            .collect();
        // The document's own worked example: 0x55ea82cff77c gives 1f877c.
        assert_eq!(
            (f[0].module, f[0].offset, f[0].kind),
            (Some(0), 0x1f877c, Pc::Exact)
        );
        assert_eq!((f[1].offset, f[1].kind), (0x1f84a7, Pc::Return));
        assert_eq!((f[2].module, f[2].offset), (Some(1), 0x29000));
        assert_eq!(f[3].module, None);
    }

    #[test]
    fn broken_documents_say_what_is_wrong() {
        assert!(matches!(parse("{"), Err(TraceError::NotJson(_))));
        assert_eq!(parse("{}").unwrap_err().to_string(), "no \"symbols\" array");
        let bad_pc = r#"{"symbols": [], "threads": [{"pcs": ["0xzz"]}]}"#;
        assert_eq!(
            parse(bad_pc).unwrap_err().to_string(),
            "threads[0].pcs[0]: \"0xzz\" is not hexadecimal"
        );
        let backwards = r#"{"symbols": [{"pc_range": {"start": "0x10", "end": "0x1"},
            "path": "a", "runtime_offset": "0", "compiled_offset": "0"}], "threads": []}"#;
        assert!(matches!(
            parse(backwards),
            Err(TraceError::Module {
                index: 0,
                problem: ValueError::Backwards {
                    start: 0x10,
                    end: 1
                }
            })
        ));
        assert!(matches!(
            parse(bad_pc),
            Err(TraceError::Thread(ThreadError::Pc {
                thread: 0,
                index: 0,
                problem: ValueError::NotHex(_)
            }))
        ));
    }
}
