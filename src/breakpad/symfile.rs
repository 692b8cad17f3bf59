//! Reading a Breakpad symbol file back: the records a stack walker resolves addresses
//! with (FUNC, line, INLINE, INLINE_ORIGIN, FILE, PUBLIC). One pass checks every record
//! and indexes the functions and names; a function's line and INLINE records are read
//! when an address falls in it. Names stay in the file's bytes (a map of it, usually),
//! and the pages read are released as the pass goes, so that loading costs a few words
//! per function and name, not the file's size: a 400 MB file fits, and a crafted one
//! (one INLINE record of 20 million ranges) costs no more than its text.
//!
//! A damaged record is skipped with a warning naming its line; the rest of the file is
//! still used, as stack walkers do.

/// How deep a chain of inlined calls is followed: compilers stop inlining far sooner
/// (GCC's and LLVM's deepest real chains are a few dozen), and a crafted file's
/// million nested INLINE records would otherwise print a million frames per address.
pub(crate) const MAX_INLINE_DEPTH: usize = 256;

pub use super::header::ModuleRecord;

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
    name_at: u64,
    name_len: u32,
    /// Its line and INLINE records: `body_len` bytes from `body_at`.
    body_len: u32,
    body_at: u64,
}

/// A line record, as a lookup reads it.
#[derive(Clone, Copy, Debug)]
struct LineRec {
    addr: u64,
    size: u64,
    line: u32,
    file: u32,
}

/// One range of an INLINE record, as a lookup reads it.
#[derive(Clone, Copy, Debug)]
struct InlineRange {
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

/// A line the reader could not use, by its number (from 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// Its line number, from 1.
    pub line: u64,
    /// What is wrong with it.
    pub problem: &'static str,
}

/// The most damaged lines reported one by one; the rest are counted.
const MAX_DAMAGE: usize = 20;

/// The most FUNC and PUBLIC records indexed: the largest real symbol files (Chromium's,
/// Firefox's libxul) hold a few million.
pub(crate) const MAX_SYMBOLS: usize = 4 << 20;

/// The most FILE and INLINE_ORIGIN records indexed, likewise.
pub(crate) const MAX_NAMES: usize = 4 << 20;

/// The most bytes of line and INLINE records one function's lookup reads: the largest
/// real functions' take a few MiB.
pub(crate) const MAX_BODY: usize = 32 << 20;

/// The longest record read: a real INLINE record's ranges take a few KiB.
const MAX_RECORD: usize = 16 << 20;

/// How much of a mapped file is read before its pages are released.
const RELEASE_EVERY: usize = 64 << 20;

/// What one lookup's names are counted as read: a page.
const NAME_PAGE: usize = 4096;

/// One frame an address resolves to: a function, and where in its source the address
/// is (the innermost frame's line record, or for an inlined call's caller the call
/// site).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The function's name (of the inlined function, for an inlined frame).
    pub function: &'a str,
    /// Offset of the address from the function's start (FUNC or PUBLIC), for the
    /// outermost frame; inlined frames have none.
    pub offset: Option<u64>,
    /// The source file, when a line record (or call site) names one.
    pub file: Option<&'a str>,
    /// The source line, when known (line 0 is no line).
    pub line: Option<u32>,
    /// True for every frame but the outermost: an inlined call.
    pub inlined: bool,
    /// Named by a PUBLIC record (a symbol without debug info): no source, no size.
    pub public: bool,
}

/// What a lookup could not follow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cut {
    /// Inlined calls deeper than asked for.
    pub depth: bool,
    /// A function whose records are larger than 32 MiB: its lines and inlined
    /// calls were not read.
    pub body: bool,
}

/// A parsed symbol file. `B` holds the text (a map of the file, or bytes in memory).
pub struct SymFile<B> {
    data: B,
    /// The `MODULE` record, when the file has one.
    pub module: Option<ModuleRecord>,
    files: Vec<(u32, Text)>,
    origins: Vec<(u32, Text)>,
    funcs: Vec<Func>,
    publics: Vec<Public>,
    damage: Vec<Damage>,
    damaged: u64,
    /// Past the last byte a record names: the end of the furthest FUNC, or the byte
    /// after the last PUBLIC.
    end: u64,
    /// Large functions' records, indexed when first looked up.
    indexed: std::sync::Mutex<Indexed>,
    /// Drops a part of `data` that was read from memory (a map's pages), so that bodies
    /// read for lookups do not add up to the file's size.
    release: fn(&B, &[u8]),
    /// Bytes of bodies read since the file's pages were last released.
    read_since_release: std::sync::atomic::AtomicUsize,
}

/// A function's name as a debugger writes it, for comparing: no spaces, and MSVC's
/// `` `anonymous namespace' `` as the dumpers write it.
fn debugger_name(name: &str) -> String {
    name.replace("`anonymous namespace'", "(anonymous namespace)")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

/// `name` without its parameter list and what follows it (` const`): cut at the first
/// `(` outside template arguments that does not open `(anonymous namespace)`.
fn strip_parameters(name: &str) -> &str {
    let mut depth = 0i32;
    for (i, c) in name.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            '(' if depth == 0 && !name[i..].starts_with("(anonymous namespace)") => {
                // `operator()` keeps its own parentheses.
                if name[..i].ends_with("operator") {
                    continue;
                }
                return &name[..i];
            }
            _ => {}
        }
    }
    name
}

/// A function body at most this large is indexed on its first lookup and the index
/// kept (a report names many addresses in few functions); a larger one, whose index
/// could take the whole budget, is read through for each lookup.
const INDEX_UP_TO: usize = INDEX_BUDGET / 4;

/// A function body smaller than this is read through on each lookup: a few records,
/// cheaper to read again than to keep an index entry for (a file of millions of small
/// functions would fill the budget with entries).
const INDEX_FROM: usize = 256;

/// The most memory the indexed bodies of one file may take; the least recently used
/// are dropped past it.
const INDEX_BUDGET: usize = 160 << 20;

/// Function bodies indexed for lookups, by function (its index in `funcs`), with when
/// each was last used.
#[derive(Default)]
struct Indexed {
    // Keyed by position in `funcs`, not by anything the file chooses: FxHash serves.
    bodies: rustc_hash::FxHashMap<usize, (std::sync::Arc<Body>, u64)>,
    bytes: usize,
    clock: u64,
}

/// What an entry of the index costs besides its records: the map's slot and the
/// allocation's header, about.
const INDEX_ENTRY: usize = 160;

impl Indexed {
    /// Drops the least recently used bodies until at most `bytes` are held: half the
    /// budget at once, so that a run of many small functions sorts the map rarely.
    fn evict_to(&mut self, bytes: usize) {
        let mut by_use: Vec<(u64, usize)> = self
            .bodies
            .iter()
            .map(|(&key, (_, used))| (*used, key))
            .collect();
        by_use.sort_unstable();
        for (_, key) in by_use {
            if self.bytes <= bytes {
                break;
            }
            if let Some((gone, _)) = self.bodies.remove(&key) {
                self.bytes -= gone.bytes() + INDEX_ENTRY;
            }
        }
    }
}

/// A function's line records sorted by address, and its inline ranges by depth, then
/// address (both stably, so that of records with one address the file's last wins, as
/// when the body is read through).
struct Body {
    lines: Vec<LineRec>,
    inlines: Vec<(u32, InlineRange)>,
}

impl Body {
    fn index(body: &[u8], max_depth: usize) -> Body {
        let mut lines = Vec::new();
        let mut inlines = Vec::new();
        each_record(
            body,
            max_depth.saturating_add(1),
            |l| lines.push(l),
            |depth, range| inlines.push((depth as u32, range)),
        );
        lines.sort_by_key(|l| l.addr);
        inlines.sort_by_key(|(d, r)| (*d, r.addr));
        lines.shrink_to_fit();
        inlines.shrink_to_fit();
        Body { lines, inlines }
    }

    fn bytes(&self) -> usize {
        self.lines.len() * std::mem::size_of::<LineRec>()
            + self.inlines.len() * std::mem::size_of::<(u32, InlineRange)>()
    }

    /// As [`read_body`] answers.
    fn find(&self, addr: u64, max_depth: usize) -> (Option<LineRec>, Vec<InlineRange>, bool) {
        let line = self
            .lines
            .partition_point(|l| l.addr <= addr)
            .checked_sub(1)
            .map(|i| self.lines[i])
            .filter(|l| addr - l.addr < l.size);
        let mut chain = Vec::new();
        let mut deeper = false;
        for depth in 0u32.. {
            let from = self.inlines.partition_point(|(d, _)| *d < depth);
            let to = self.inlines.partition_point(|(d, _)| *d <= depth);
            let at_depth = &self.inlines[from..to];
            let Some((_, r)) = at_depth
                .partition_point(|(_, r)| r.addr <= addr)
                .checked_sub(1)
                .map(|i| at_depth[i])
                .filter(|(_, r)| addr - r.addr < r.size)
            else {
                break;
            };
            if chain.len() >= max_depth {
                deeper = true;
                break;
            }
            chain.push(r);
        }
        (line, chain, deeper)
    }
}

impl<B: AsRef<[u8]>> SymFile<B> {
    /// Reads every record of `data`. Never fails: what cannot be read is in
    /// [`SymFile::damage`].
    pub fn parse(data: B) -> SymFile<B> {
        Self::parse_releasing(data, |_, _| {})
    }

    /// [`SymFile::parse`], calling `release` on each part of `data` read (to drop a
    /// map's pages from memory: names are read again from it when asked for).
    pub(crate) fn parse_releasing(data: B, release: fn(&B, &[u8])) -> SymFile<B> {
        let mut reader = Reader::default();
        reader.read(data.as_ref(), |part| release(&data, part));
        let Reader {
            module,
            mut files,
            mut origins,
            mut funcs,
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
            table.shrink_to_fit();
        }
        funcs.sort_by_key(|f| f.addr);
        funcs.shrink_to_fit();
        publics.sort_by_key(|p| p.addr);
        publics.shrink_to_fit();
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
            publics,
            damage,
            damaged,
            end,
            indexed: Default::default(),
            release,
            read_since_release: Default::default(),
        }
    }

    /// Past the last byte any record names (PUBLIC records counting one byte).
    pub(crate) fn end(&self) -> u64 {
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

    /// The address of the function a debugger names `name` (WinDbg's `ns::Class::f`,
    /// without its parameter list): a FUNC whose name is `name`, or is `name` followed by
    /// a parameter list, else such a PUBLIC. Spaces are not compared (WinDbg writes
    /// `vector<int,std::allocator<int> >`, the dumpers `vector<int, std::allocator<int> >`),
    /// and WinDbg's `` `anonymous namespace' `` is `(anonymous namespace)`. `None` when no
    /// record, or records at more than one address (overloads), answer to it: a name
    /// that does not tell the function gives no address rather than a guess.
    pub(crate) fn address_of(&self, name: &str) -> Option<u64> {
        let want = debugger_name(name);
        if want.is_empty() {
            return None;
        }
        let mut found: Option<u64> = None;
        let funcs = self.funcs.iter().map(|f| {
            let name = Text {
                at: f.name_at,
                len: f.name_len,
            };
            (f.addr, name)
        });
        for (addr, text) in funcs.chain(self.publics.iter().map(|p| (p.addr, p.name))) {
            if debugger_name(strip_parameters(self.text(text))) != want {
                continue;
            }
            match found {
                Some(a) if a != addr => return None,
                _ => found = Some(addr),
            }
        }
        found
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
    /// outermost); says what it could not follow.
    pub(crate) fn lookup_within(&self, addr: u64, max_depth: usize) -> (Vec<Frame<'_>>, Cut) {
        // The names a lookup returns are read from the file: a page of them counted per
        // lookup, so that a report naming each of a file's millions of functions does
        // not keep the whole file resident (3M lookups held 280 MB of its pages).
        self.read_through(NAME_PAGE);
        match self.func_at(addr) {
            Some(f) => self.func_frames(f, addr, max_depth),
            None => (
                self.public_frame(addr).into_iter().collect(),
                Cut::default(),
            ),
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

    fn func_frames(&self, f: &Func, addr: u64, max_depth: usize) -> (Vec<Frame<'_>>, Cut) {
        let mut cut = Cut::default();
        let body = self
            .data
            .as_ref()
            .get(f.body_at as usize..)
            .and_then(|rest| rest.get(..f.body_len as usize))
            .unwrap_or_default();
        let (line, chain) = if body.len() > MAX_BODY {
            cut.body = true;
            (None, Vec::new())
        } else {
            let (line, chain, deeper) = if (INDEX_FROM..=INDEX_UP_TO).contains(&body.len()) {
                self.indexed_body(f, body, max_depth).find(addr, max_depth)
            } else {
                self.read_through(body.len());
                read_body(body, addr, max_depth)
            };
            cut.depth = deeper;
            (line, chain)
        };
        // Innermost first: the deepest inlined function at the line record's place;
        // each caller at the call site of the call it made.
        let mut frames = Vec::with_capacity(chain.len() + 1);
        let mut file = line.and_then(|l| self.numbered(&self.files, l.file));
        // Line 0 is "no line" (compiler-generated code), as addr2line prints it.
        let mut line_no = line.map(|l| l.line).filter(|&l| l != 0);
        // An origin named again down the chain is read (and checked as UTF-8) once: a
        // crafted chain of 256 calls of one 8 MiB name checked 2 GB per lookup.
        let mut last: Option<(u32, &str)> = None;
        for r in chain.iter().rev() {
            let function = match last {
                Some((origin, name)) if origin == r.origin => name,
                _ => {
                    let name = self.numbered(&self.origins, r.origin).unwrap_or("");
                    last = Some((r.origin, name));
                    name
                }
            };
            frames.push(Frame {
                function,
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
            function: self.text(Text {
                at: f.name_at,
                len: f.name_len,
            }),
            offset: Some(addr - f.addr),
            file,
            line: line_no,
            inlined: false,
            public: false,
        });
        (frames, cut)
    }
}

impl<B: AsRef<[u8]>> SymFile<B> {
    /// Counts `bytes` of bodies read, and past [`RELEASE_EVERY`] releases the whole
    /// file's pages: what lookups touched is read again from the file if needed.
    fn read_through(&self, bytes: usize) {
        use std::sync::atomic::Ordering;
        let read = self.read_since_release.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if read >= RELEASE_EVERY {
            self.read_since_release.store(0, Ordering::Relaxed);
            (self.release)(&self.data, self.data.as_ref());
        }
    }

    /// `f`'s body indexed: from the cache, else indexed now (and cached while the
    /// budget allows, dropping the least recently used).
    fn indexed_body(&self, f: &Func, body: &[u8], max_depth: usize) -> std::sync::Arc<Body> {
        let key = (f as *const Func as usize - self.funcs.as_ptr() as usize)
            / std::mem::size_of::<Func>();
        let mut cache = self
            .indexed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cache.clock += 1;
        let now = cache.clock;
        if let Some((b, used)) = cache.bodies.get_mut(&key) {
            *used = now;
            return b.clone();
        }
        let b = std::sync::Arc::new(Body::index(body, max_depth.min(MAX_INLINE_DEPTH)));
        self.read_through(body.len());
        let size = b.bytes() + INDEX_ENTRY;
        if cache.bytes + size > INDEX_BUDGET {
            cache.evict_to(INDEX_BUDGET / 2);
        }
        cache.bytes += size;
        cache.bodies.insert(key, (b.clone(), now));
        b
    }
}

/// What a function's records say of `addr`: the line record holding it, and the
/// inlined calls holding it, outermost (depth 0) first, at most `max_depth` of them
/// (true when there were more). As the file's order has it, the record of each kind
/// (and depth) with the greatest address at or before `addr` is the one that must hold
/// it.
fn read_body(
    body: &[u8],
    addr: u64,
    max_depth: usize,
) -> (Option<LineRec>, Vec<InlineRange>, bool) {
    let mut line: Option<LineRec> = None;
    // The best range at each depth up to one past `max_depth` (to tell a cut).
    let keep = max_depth.saturating_add(1).min(MAX_INLINE_DEPTH + 1);
    let mut best: Vec<Option<InlineRange>> = Vec::new();
    each_record(
        body,
        keep,
        |l| {
            if l.addr <= addr && line.is_none_or(|b| l.addr >= b.addr) {
                line = Some(l);
            }
        },
        |depth, r| {
            if r.addr > addr {
                return;
            }
            if best.len() <= depth {
                best.resize(depth + 1, None);
            }
            if best[depth].is_none_or(|b| r.addr >= b.addr) {
                best[depth] = Some(r);
            }
        },
    );
    let line = line.filter(|l| addr - l.addr < l.size);
    let mut chain = Vec::new();
    let mut deeper = false;
    for r in &best {
        match r {
            Some(r) if addr - r.addr < r.size => {
                if chain.len() >= max_depth {
                    deeper = true;
                    break;
                }
                chain.push(*r);
            }
            _ => break,
        }
    }
    (line, chain, deeper)
}

/// Each line record of a function's `body`, and each range of its INLINE records less
/// deep than `keep`, in the file's order; damaged records are passed over (the pass
/// that indexed the file has named them).
fn each_record(
    body: &[u8],
    keep: usize,
    mut on_line: impl FnMut(LineRec),
    mut on_range: impl FnMut(usize, InlineRange),
) {
    for raw in body.split(|&b| b == b'\n') {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let Some(rest) = raw.strip_prefix(b"INLINE ") else {
            let mut fields = Fields {
                line: raw,
                pos: 0,
                at: 0,
            };
            if let Ok(l) = line_record(&mut fields) {
                on_line(l);
            }
            continue;
        };
        let mut fields = Fields {
            line: rest,
            pos: 0,
            at: 0,
        };
        let Ok((depth, call_line, call_file, origin)) = inline_head(&mut fields) else {
            continue;
        };
        let depth = depth as usize;
        if depth >= keep {
            continue;
        }
        while !fields.at_end() {
            let (Ok(addr), Ok(size)) = (fields.hex(), fields.hex()) else {
                break;
            };
            let range = InlineRange {
                addr,
                size,
                call_line,
                call_file,
                origin,
            };
            on_range(depth, range);
        }
    }
}

/// An INLINE record's depth, call line, call file and origin.
fn inline_head(fields: &mut Fields<'_>) -> Result<(u32, u32, u32, u32), &'static str> {
    let depth = fields.dec32()?;
    let call_line = u32::try_from(fields.dec()?).map_err(|_| "a line number too large")?;
    let call_file = fields.dec32()?;
    let origin = fields.dec32()?;
    Ok((depth, call_line, call_file, origin))
}

/// A line record's fields.
fn line_record(fields: &mut Fields<'_>) -> Result<LineRec, &'static str> {
    let addr = fields.hex()?;
    let size = fields.hex()?;
    let line = fields.dec()?;
    let file = fields.dec32()?;
    Ok(LineRec {
        addr,
        size,
        // Line numbers past u32 are no real source's.
        line: u32::try_from(line).map_err(|_| "a line number too large")?,
        file,
    })
}

#[derive(Default)]
struct Reader {
    module: Option<ModuleRecord>,
    files: Vec<(u32, Text)>,
    origins: Vec<(u32, Text)>,
    funcs: Vec<Func>,
    publics: Vec<Public>,
    damage: Vec<Damage>,
    damaged: u64,
    /// Whether line and INLINE records have a FUNC to belong to: the last record that
    /// was not one of them (or damaged) was a FUNC.
    in_func: bool,
}

impl Reader {
    fn read(&mut self, data: &[u8], release: impl Fn(&[u8])) {
        let mut at = 0usize;
        let mut released = 0usize;
        let mut number = 0u64;
        while at < data.len() {
            // The line's end, found a chunk at a time so that the pages of a line of any
            // length are released as they are passed.
            let mut from = at;
            let end = loop {
                let chunk = (from + RELEASE_EVERY).min(data.len());
                match memchr::memchr(b'\n', &data[from..chunk]) {
                    Some(i) => break from + i,
                    None if chunk == data.len() => break data.len(),
                    None => {
                        from = chunk;
                        if from - released >= RELEASE_EVERY {
                            release(&data[released..from]);
                            released = from;
                        }
                    }
                }
            };
            number += 1;
            let mut line = &data[at..end];
            if let Some(l) = line.strip_suffix(b"\r") {
                line = l;
            }
            let read = if line.len() > MAX_RECORD {
                Err("a record longer than any real one (16 MiB)")
            } else if line.is_empty() {
                Ok(())
            } else {
                self.record(line, at as u64)
            };
            if let Err(problem) = read {
                self.damaged += 1;
                if self.damage.len() < MAX_DAMAGE {
                    self.damage.push(Damage {
                        line: number,
                        problem,
                    });
                }
            }
            at = end + 1;
            if at.saturating_sub(released) >= RELEASE_EVERY {
                release(&data[released..at.min(data.len())]);
                released = at.min(data.len());
            }
        }
        if released < data.len() {
            release(&data[released..]);
        }
        self.close_func(data.len() as u64);
    }

    /// One record; `at` is its offset in the file.
    fn record(&mut self, line: &[u8], at: u64) -> Result<(), &'static str> {
        let mut fields = Fields { line, pos: 0, at };
        let kind = fields.word();
        // Line records alone start with a number (their address, in lowercase hex:
        // record names are uppercase).
        let is_line = kind
            .first()
            .is_some_and(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
        // A record of another kind ends the last FUNC's body; a damaged line does not.
        if matches!(
            kind,
            b"MODULE" | b"INFO" | b"STACK" | b"FILE" | b"INLINE_ORIGIN" | b"FUNC" | b"PUBLIC"
        ) {
            self.close_func(at);
        }
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
                self.name(true, n, fields.rest())
            }
            b"INLINE_ORIGIN" => {
                let n = fields.dec32()?;
                self.name(false, n, fields.rest())
            }
            b"FUNC" => self.func(fields, at + line.len() as u64),
            b"INLINE" => self.inline(fields),
            b"PUBLIC" => {
                fields.skip_m();
                let addr = fields.hex()?;
                fields.hex()?;
                let name = fields.rest();
                self.symbol()?;
                self.publics.push(Public { addr, name });
                Ok(())
            }
            _ if is_line => {
                if !self.in_func {
                    return Err("a line record not after its FUNC");
                }
                line_record(&mut Fields { line, pos: 0, at }).map(|_| ())
            }
            _ => Err("not a record of the Breakpad format"),
        }
    }

    fn name(&mut self, file: bool, n: u32, text: Text) -> Result<(), &'static str> {
        if self.files.len() + self.origins.len() >= MAX_NAMES {
            return Err("more FILE and INLINE_ORIGIN records than this reader keeps");
        }
        if file {
            self.files.push((n, text));
        } else {
            self.origins.push((n, text));
        }
        Ok(())
    }

    /// Room for one more FUNC or PUBLIC record.
    fn symbol(&self) -> Result<(), &'static str> {
        if self.funcs.len() + self.publics.len() >= MAX_SYMBOLS {
            return Err("more FUNC and PUBLIC records than this reader keeps");
        }
        Ok(())
    }

    /// A FUNC record whose line ends at byte `line_end`.
    fn func(&mut self, mut fields: Fields<'_>, line_end: u64) -> Result<(), &'static str> {
        fields.skip_m();
        let addr = fields.hex()?;
        let size = fields.hex()?;
        fields.hex()?;
        let name = fields.rest();
        self.symbol()?;
        self.funcs.push(Func {
            addr,
            size: size.min(u64::MAX - addr),
            name_at: name.at,
            name_len: name.len,
            body_len: 0,
            // Past the line's end and its newline (a CR before it is part of the body's
            // first line, and read as such).
            body_at: line_end + 1,
        });
        self.in_func = true;
        Ok(())
    }

    /// Ends the last FUNC's body before byte `at`, if it is still open.
    fn close_func(&mut self, at: u64) {
        if self.in_func
            && let Some(f) = self.funcs.last_mut()
        {
            let len = at.saturating_sub(f.body_at);
            // A body too large to index is read as none (see MAX_BODY).
            f.body_len = u32::try_from(len).unwrap_or(u32::MAX);
        }
        self.in_func = false;
    }

    fn inline(&mut self, mut fields: Fields<'_>) -> Result<(), &'static str> {
        if !self.in_func {
            return Err("an INLINE record not after its FUNC");
        }
        inline_head(&mut fields)?;
        let mut ranges = 0u64;
        while !fields.at_end() {
            fields.hex()?;
            fields.hex()?;
            ranges += 1;
        }
        if ranges == 0 {
            return Err("an INLINE record without an address range");
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

    // Digits are read as bytes: going through `str` first checked each word for UTF-8,
    // a seventh of a lookup's time.
    fn hex(&mut self) -> Result<u64, &'static str> {
        let w = self.word();
        if w.is_empty() || w.len() > 16 {
            return Err("a missing or malformed hexadecimal field");
        }
        w.iter().try_fold(0u64, |v, &b| {
            let digit = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                b'A'..=b'F' => b - b'A' + 10,
                _ => return Err("a malformed hexadecimal field"),
            };
            Ok(v << 4 | u64::from(digit))
        })
    }

    fn dec(&mut self) -> Result<u64, &'static str> {
        let w = self.word();
        if w.is_empty() || w.len() > 20 {
            return Err("a missing or malformed decimal field");
        }
        w.iter().try_fold(0u64, |v, &b| {
            if !b.is_ascii_digit() {
                return Err("a missing or malformed decimal field");
            }
            v.checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(b - b'0')))
                .ok_or("a malformed decimal field")
        })
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
#[path = "symfile_tests.rs"]
mod tests;
