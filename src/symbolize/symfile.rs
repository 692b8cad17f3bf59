//! Reading a Breakpad symbol file back: the records a stack walker resolves addresses
//! with (FUNC, line, INLINE, INLINE_ORIGIN, FILE, PUBLIC), read in one pass and indexed
//! for lookups by binary search. Names stay in the file's bytes (a map of it, usually):
//! the index holds offsets, so loading costs one parse and a few words per record.
//!
//! A damaged record is skipped with a warning naming its line; the rest of the file is
//! still used, as stack walkers do.

use std::ops::Range;

/// A name in the file: `len` bytes from `at`.
#[derive(Clone, Copy, Debug, Default)]
struct Text {
    at: u64,
    len: u32,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Func {
    pub addr: u64,
    pub size: u64,
    name: Text,
    /// Into `SymFile::lines`, sorted by address.
    lines: (u32, u32),
    /// Into `SymFile::inlines`, sorted by depth, then address.
    inlines: (u32, u32),
}

#[derive(Clone, Copy, Debug)]
struct LineRec {
    addr: u64,
    size: u32,
    line: u32,
    file: u32,
}

/// One range of an INLINE record.
#[derive(Clone, Copy, Debug)]
struct InlineRange {
    depth: u32,
    addr: u64,
    size: u64,
    call_line: u32,
    call_file: u32,
    origin: u32,
}

#[derive(Clone, Copy, Debug)]
struct Public {
    addr: u64,
    name: Text,
}

/// The MODULE record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModuleRecord {
    pub os: String,
    pub arch: String,
    pub id: String,
    pub name: String,
}

/// A line the reader could not use, by its number (from 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    pub line: u64,
    pub problem: &'static str,
}

/// The most damaged lines reported one by one; the rest are counted.
const MAX_DAMAGE: usize = 20;

/// One frame an address resolves to: a function, and where in its source the address
/// is (the innermost frame's line record, or for an inlined call's caller the call
/// site).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    pub function: &'a str,
    /// Offset of the address from the function's start (FUNC or PUBLIC), for the
    /// outermost frame; inlined frames have none.
    pub offset: Option<u64>,
    pub file: Option<&'a str>,
    pub line: Option<u32>,
    /// True for every frame but the outermost: an inlined call.
    pub inlined: bool,
    /// Named by a PUBLIC record (a symbol without debug info): no source, no size.
    pub public: bool,
}

/// A parsed symbol file. `B` holds the text (a map of the file, or bytes in memory).
pub struct SymFile<B> {
    data: B,
    pub module: Option<ModuleRecord>,
    files: Vec<(u32, Text)>,
    origins: Vec<(u32, Text)>,
    funcs: Vec<Func>,
    lines: Vec<LineRec>,
    inlines: Vec<InlineRange>,
    publics: Vec<Public>,
    damage: Vec<Damage>,
    damaged: u64,
    /// Past the last byte a record names: the end of the furthest FUNC, or the byte
    /// after the last PUBLIC.
    end: u64,
}

impl<B: AsRef<[u8]>> SymFile<B> {
    /// Reads every record of `data`. Never fails: what cannot be read is in
    /// [`SymFile::damage`].
    pub fn parse(data: B) -> SymFile<B> {
        let mut reader = Reader::default();
        reader.read(data.as_ref());
        let Reader {
            module,
            mut files,
            mut origins,
            mut funcs,
            mut lines,
            mut inlines,
            mut publics,
            damage,
            damaged,
            ..
        } = reader;
        // Numbered names sorted by number (the last record of a number wins, as a
        // map filled in file order would have it).
        for table in [&mut files, &mut origins] {
            table.reverse();
            table.sort_by_key(|(n, _)| *n);
            table.dedup_by_key(|(n, _)| *n);
        }
        for f in &funcs {
            let (a, b) = f.lines;
            lines[a as usize..b as usize].sort_unstable_by_key(|l| l.addr);
            let (a, b) = f.inlines;
            inlines[a as usize..b as usize].sort_unstable_by_key(|i| (i.depth, i.addr));
        }
        funcs.sort_by_key(|f| f.addr);
        publics.sort_by_key(|p| p.addr);
        let end = funcs
            .iter()
            .map(|f| f.addr.saturating_add(f.size))
            .chain(publics.last().map(|p| p.addr.saturating_add(1)))
            .max()
            .unwrap_or(0);
        SymFile {
            data,
            module,
            files,
            origins,
            funcs,
            lines,
            inlines,
            publics,
            damage,
            damaged,
            end,
        }
    }

    /// Past the last byte any record names (PUBLIC records counting one byte).
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Damaged lines, the first few by number, and how many there were in all.
    pub fn damage(&self) -> (&[Damage], u64) {
        (&self.damage, self.damaged)
    }

    /// Counts of FUNC and PUBLIC records read.
    pub fn counts(&self) -> (usize, usize) {
        (self.funcs.len(), self.publics.len())
    }

    fn text(&self, t: Text) -> &str {
        let bytes = self.data.as_ref();
        let start = t.at as usize;
        bytes
            .get(start..start + t.len as usize)
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or("")
    }

    fn numbered(&self, table: &[(u32, Text)], n: u32) -> Option<&str> {
        let i = table.binary_search_by_key(&n, |(k, _)| *k).ok()?;
        Some(self.text(table[i].1))
    }

    /// What `addr` (relative to the module's load address) resolves to, innermost
    /// frame first: inlined calls by depth, then the function. Empty when neither a
    /// FUNC nor a PUBLIC record covers it.
    ///
    /// As stack walkers resolve: the FUNC whose range holds the address; else the
    /// nearest PUBLIC at or before it, unless a FUNC starts between the two (the
    /// address is then past that function's end, in code no record describes).
    pub fn lookup(&self, addr: u64) -> Vec<Frame<'_>> {
        self.lookup_within(addr, usize::MAX).0
    }

    /// [`SymFile::lookup`], following at most `max_depth` levels of inlined calls (the
    /// outermost): true when there were more.
    pub fn lookup_within(&self, addr: u64, max_depth: usize) -> (Vec<Frame<'_>>, bool) {
        match self.func_at(addr) {
            Some(f) => self.func_frames(f, addr, max_depth),
            None => (self.public_frame(addr).into_iter().collect(), false),
        }
    }

    fn func_at(&self, addr: u64) -> Option<&Func> {
        let i = self
            .funcs
            .partition_point(|f| f.addr <= addr)
            .checked_sub(1)?;
        let f = &self.funcs[i];
        (addr - f.addr < f.size).then_some(f)
    }

    fn public_frame(&self, addr: u64) -> Option<Frame<'_>> {
        let i = self
            .publics
            .partition_point(|p| p.addr <= addr)
            .checked_sub(1)?;
        let p = &self.publics[i];
        let func_between = self
            .funcs
            .partition_point(|f| f.addr <= addr)
            .checked_sub(1)
            .is_some_and(|j| self.funcs[j].addr > p.addr);
        (!func_between).then(|| Frame {
            function: self.text(p.name),
            offset: Some(addr - p.addr),
            file: None,
            line: None,
            inlined: false,
            public: true,
        })
    }

    fn func_frames(&self, f: &Func, addr: u64, max_depth: usize) -> (Vec<Frame<'_>>, bool) {
        let (a, b) = f.lines;
        let lines = &self.lines[a as usize..b as usize];
        let line = lines
            .partition_point(|l| l.addr <= addr)
            .checked_sub(1)
            .map(|i| &lines[i])
            .filter(|l| addr - l.addr < u64::from(l.size));
        // The inlined calls holding the address, outermost (depth 0) first.
        let (a, b) = f.inlines;
        let inlines = &self.inlines[a as usize..b as usize];
        let mut chain: Vec<&InlineRange> = Vec::new();
        let mut cut = false;
        for depth in 0u32.. {
            let at_depth = depth_range(inlines, depth);
            if at_depth.is_empty() {
                break;
            }
            let ranges = &inlines[at_depth];
            let Some(r) = ranges
                .partition_point(|r| r.addr <= addr)
                .checked_sub(1)
                .map(|i| &ranges[i])
                .filter(|r| addr - r.addr < r.size)
            else {
                break;
            };
            if chain.len() >= max_depth {
                cut = true;
                break;
            }
            chain.push(r);
        }
        // Innermost first: the deepest inlined function at the line record's place;
        // each caller at the call site of the call it made.
        let mut frames = Vec::with_capacity(chain.len() + 1);
        let mut file = line.and_then(|l| self.numbered(&self.files, l.file));
        // Line 0 is "no line" (compiler-generated code), as addr2line prints it.
        let mut line_no = line.map(|l| l.line).filter(|&l| l != 0);
        for r in chain.iter().rev() {
            frames.push(Frame {
                function: self.numbered(&self.origins, r.origin).unwrap_or(""),
                offset: None,
                file,
                line: line_no,
                inlined: true,
                public: false,
            });
            file = self.numbered(&self.files, r.call_file);
            line_no = Some(r.call_line);
        }
        frames.push(Frame {
            function: self.text(f.name),
            offset: Some(addr - f.addr),
            file,
            line: line_no,
            inlined: false,
            public: false,
        });
        (frames, cut)
    }
}

/// The slice of `inlines` (sorted by depth) at `depth`.
fn depth_range(inlines: &[InlineRange], depth: u32) -> Range<usize> {
    inlines.partition_point(|r| r.depth < depth)..inlines.partition_point(|r| r.depth <= depth)
}

#[derive(Default)]
struct Reader {
    module: Option<ModuleRecord>,
    files: Vec<(u32, Text)>,
    origins: Vec<(u32, Text)>,
    funcs: Vec<Func>,
    lines: Vec<LineRec>,
    inlines: Vec<InlineRange>,
    publics: Vec<Public>,
    damage: Vec<Damage>,
    damaged: u64,
    /// Whether line and INLINE records have a FUNC to belong to.
    in_func: bool,
}

impl Reader {
    fn read(&mut self, data: &[u8]) {
        let mut at = 0usize;
        let mut number = 0u64;
        while at < data.len() {
            let end = memchr::memchr(b'\n', &data[at..]).map_or(data.len(), |i| at + i);
            number += 1;
            let mut line = &data[at..end];
            if let Some(l) = line.strip_suffix(b"\r") {
                line = l;
            }
            if !line.is_empty()
                && let Err(problem) = self.record(line, at as u64)
            {
                self.damaged += 1;
                if self.damage.len() < MAX_DAMAGE {
                    self.damage.push(Damage {
                        line: number,
                        problem,
                    });
                }
            }
            at = end + 1;
        }
        self.close_func();
    }

    /// One record; `at` is its offset in the file.
    fn record(&mut self, line: &[u8], at: u64) -> Result<(), &'static str> {
        let mut fields = Fields { line, pos: 0, at };
        let kind = fields.word();
        match kind {
            b"MODULE" => {
                let os = fields.word_str()?;
                let arch = fields.word_str()?;
                let id = fields.word_str()?;
                let name = std::str::from_utf8(fields.rest_bytes())
                    .map_err(|_| "a module name that is not UTF-8")?;
                self.module = Some(ModuleRecord {
                    os,
                    arch,
                    id,
                    name: name.to_string(),
                });
                Ok(())
            }
            b"INFO" | b"STACK" => Ok(()),
            b"FILE" => {
                let n = fields.dec32()?;
                self.files.push((n, fields.rest()));
                Ok(())
            }
            b"INLINE_ORIGIN" => {
                let n = fields.dec32()?;
                self.origins.push((n, fields.rest()));
                Ok(())
            }
            b"FUNC" => self.func(fields),
            b"INLINE" => self.inline(fields),
            b"PUBLIC" => {
                fields.skip_m();
                let addr = fields.hex()?;
                fields.hex()?;
                self.publics.push(Public {
                    addr,
                    name: fields.rest(),
                });
                Ok(())
            }
            // Line records alone start with a number (their address, in lowercase hex:
            // record names are uppercase).
            _ if kind
                .first()
                .is_some_and(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) =>
            {
                self.line(&mut Fields { line, pos: 0, at })
            }
            _ => Err("not a record of the Breakpad format"),
        }
    }

    fn func(&mut self, mut fields: Fields<'_>) -> Result<(), &'static str> {
        self.close_func();
        fields.skip_m();
        let addr = fields.hex()?;
        let size = fields.hex()?;
        fields.hex()?;
        let name = fields.rest();
        let lines = self.lines.len() as u32;
        let inlines = self.inlines.len() as u32;
        self.funcs.push(Func {
            addr,
            size: size.min(u64::MAX - addr),
            name,
            lines: (lines, lines),
            inlines: (inlines, inlines),
        });
        self.in_func = true;
        Ok(())
    }

    /// Ends the ranges of the last FUNC's lines and inlines where the records reach.
    fn close_func(&mut self) {
        if let Some(f) = self.funcs.last_mut() {
            f.lines.1 = self.lines.len() as u32;
            f.inlines.1 = self.inlines.len() as u32;
        }
    }

    fn line(&mut self, fields: &mut Fields<'_>) -> Result<(), &'static str> {
        if !self.in_func {
            return Err("a line record before any FUNC");
        }
        let addr = fields.hex()?;
        let size = fields.hex()?;
        let line = fields.dec()?;
        let file = fields.dec32()?;
        if self.lines.len() >= u32::MAX as usize {
            return Err("more line records than this reader indexes");
        }
        self.lines.push(LineRec {
            addr,
            size: u32::try_from(size).map_err(|_| "a line record larger than 4 GiB")?,
            // Line numbers past u32 are no real source's.
            line: u32::try_from(line).map_err(|_| "a line number too large")?,
            file,
        });
        Ok(())
    }

    fn inline(&mut self, mut fields: Fields<'_>) -> Result<(), &'static str> {
        if !self.in_func {
            return Err("an INLINE record before any FUNC");
        }
        let depth = fields.dec32()?;
        let call_line = u32::try_from(fields.dec()?).map_err(|_| "a line number too large")?;
        let call_file = fields.dec32()?;
        let origin = fields.dec32()?;
        let first = self.inlines.len();
        while !fields.at_end() {
            let addr = fields.hex()?;
            let size = fields.hex()?;
            self.inlines.push(InlineRange {
                depth,
                addr,
                size,
                call_line,
                call_file,
                origin,
            });
        }
        if self.inlines.len() == first {
            return Err("an INLINE record without an address range");
        }
        if self.inlines.len() >= u32::MAX as usize {
            self.inlines.truncate(first);
            return Err("more INLINE ranges than this reader indexes");
        }
        Ok(())
    }
}

/// The fields of one record, split at single spaces as the format writes them.
struct Fields<'a> {
    line: &'a [u8],
    pos: usize,
    /// The line's offset in the file.
    at: u64,
}

impl Fields<'_> {
    fn at_end(&self) -> bool {
        self.pos >= self.line.len()
    }

    fn word(&mut self) -> &[u8] {
        let rest = &self.line[self.pos.min(self.line.len())..];
        let len = memchr::memchr(b' ', rest).unwrap_or(rest.len());
        self.pos += len + 1;
        &rest[..len]
    }

    fn word_str(&mut self) -> Result<String, &'static str> {
        std::str::from_utf8(self.word())
            .map(str::to_string)
            .map_err(|_| "a field that is not UTF-8")
    }

    /// FUNC's and PUBLIC's optional `m` field.
    fn skip_m(&mut self) {
        if self.line[self.pos.min(self.line.len())..].starts_with(b"m ") {
            self.pos += 2;
        }
    }

    fn hex(&mut self) -> Result<u64, &'static str> {
        let w = self.word();
        if w.is_empty() || w.len() > 16 {
            return Err("a missing or malformed hexadecimal field");
        }
        let s = std::str::from_utf8(w).map_err(|_| "a malformed hexadecimal field")?;
        u64::from_str_radix(s, 16).map_err(|_| "a malformed hexadecimal field")
    }

    fn dec(&mut self) -> Result<u64, &'static str> {
        let w = self.word();
        if w.is_empty() || w.len() > 20 || !w.iter().all(u8::is_ascii_digit) {
            return Err("a missing or malformed decimal field");
        }
        std::str::from_utf8(w)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or("a malformed decimal field")
    }

    fn dec32(&mut self) -> Result<u32, &'static str> {
        u32::try_from(self.dec()?).map_err(|_| "a record number too large")
    }

    fn rest_bytes(&mut self) -> &[u8] {
        let start = self.pos.min(self.line.len());
        self.pos = self.line.len();
        &self.line[start..]
    }

    /// The rest of the line (a name, which may hold spaces).
    fn rest(&mut self) -> Text {
        let start = self.pos.min(self.line.len());
        self.pos = self.line.len();
        Text {
            at: self.at + start as u64,
            len: (self.line.len() - start).min(u32::MAX as usize) as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYM: &str = "MODULE Linux x86_64 0123456789ABCDEF0123456789ABCDEF0 app
INFO CODE_ID 89674523AB01CDEF
FILE 0 /src/a.c
FILE 1 /src/b.h
INLINE_ORIGIN 0 inner
INLINE_ORIGIN 1 middle
FUNC 1000 40 0 outer(int)
INLINE 0 10 0 1 1008 20
INLINE 1 20 1 0 1010 8
1000 8 5 0
1008 10 30 1
1018 28 7 0
PUBLIC 900 0 start
PUBLIC 1040 0 after_outer
FUNC m 2000 10 0 folded
2000 10 3 0
STACK CFI INIT 1000 40 .cfa: $rsp 8 +
";

    fn names(frames: &[Frame<'_>]) -> Vec<String> {
        frames
            .iter()
            .map(|f| {
                format!(
                    "{} {}:{}",
                    f.function,
                    f.file.unwrap_or("?"),
                    f.line.map_or("?".into(), |l| l.to_string())
                )
            })
            .collect()
    }

    #[test]
    fn inline_chains_innermost_first_with_call_sites() {
        let s = SymFile::parse(SYM.as_bytes());
        assert_eq!(s.damage(), (&[][..], 0));
        assert_eq!(s.module.as_ref().unwrap().name, "app");
        assert_eq!(names(&s.lookup(0x1000)), ["outer(int) /src/a.c:5"]);
        assert_eq!(
            names(&s.lookup(0x1009)),
            ["middle /src/b.h:30", "outer(int) /src/a.c:10"]
        );
        assert_eq!(
            names(&s.lookup(0x1012)),
            [
                "inner /src/b.h:30",
                "middle /src/b.h:20",
                "outer(int) /src/a.c:10"
            ]
        );
        assert_eq!(s.lookup(0x1012)[2].offset, Some(0x12));
        assert_eq!(names(&s.lookup(0x1030)), ["outer(int) /src/a.c:7"]);
    }

    #[test]
    fn publics_only_where_no_function_starts_between() {
        let s = SymFile::parse(SYM.as_bytes());
        assert_eq!(names(&s.lookup(0x950)), ["start ?:?"]);
        assert_eq!(s.lookup(0x950)[0].offset, Some(0x50));
        // Past outer's end, after_outer's PUBLIC is the nearest.
        assert_eq!(names(&s.lookup(0x1044)), ["after_outer ?:?"]);
        // Past folded's end: a FUNC (folded) starts after the last PUBLIC.
        assert!(s.lookup(0x2010).is_empty());
        assert!(s.lookup(0x10).is_empty());
        assert_eq!(names(&s.lookup(0x200f)), ["folded /src/a.c:3"]);
    }

    #[test]
    fn damaged_lines_are_skipped_and_named() {
        let text = "MODULE Linux x86_64 ID app\n1000 4 1 0\nFUNC 1000 zz 0 f\n\
                    FUNC 1000 10 0 f\n1000 10 99999999999 0\nBOGUS\nINLINE 0 1 0 0\n\
                    1000 10 3 0\r\n";
        let s = SymFile::parse(text.as_bytes());
        let (first, count) = s.damage();
        assert_eq!(count, 5);
        assert_eq!(
            first.iter().map(|d| d.line).collect::<Vec<_>>(),
            [2, 3, 5, 6, 7]
        );
        assert_eq!(
            names(&s.lookup(0x1004)),
            ["f ?:3"],
            "the good line record is used"
        );
    }

    #[test]
    fn absurd_sizes_do_not_wrap() {
        let text = "FUNC ffffffffffffff00 ffffffffffffffff 0 top\n";
        let s = SymFile::parse(text.as_bytes());
        assert_eq!(names(&s.lookup(u64::MAX - 1)), ["top ?:?"]);
        assert!(s.lookup(0).is_empty());
    }
}
