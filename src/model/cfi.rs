//! Rows of unwind rules as plain values: what every unwind reader produces (DWARF CFI,
//! EHABI, compact unwind, x64 and arm64 `.pdata`), written by [`crate::breakpad::cfi`],
//! the one place that knows their text: the unwind tables of a module ([`CfiTables`])
//! are handed that writer ([`CfiText`]) when the module is written, so neither calls
//! the other's code by name. A function has a row per prologue (and
//! epilogue) instruction, most of them a rule or two away from the one before; keeping
//! rules as small copyable values lets the writer find what changed without formatting
//! or comparing text, which was most of a large PE's dump time.

/// What a rule is for. Ordered as written: `.cfa`, `.ra`, then registers by number.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Key {
    Cfa,
    Ra,
    /// A register: its number (which identifies it, and orders) and name.
    Reg(u16, &'static str),
}

impl Key {
    /// Compared by this alone: a register's name follows from its number, and
    /// comparing numbers is what makes finding a row's changes cheap.
    fn rank(&self) -> u32 {
        match self {
            Key::Cfa => 0,
            Key::Ra => 1,
            Key::Reg(n, _) => 2 + u32::from(*n),
        }
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.rank() == other.rank()
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Key) -> std::cmp::Ordering {
        self.rank().cmp(&other.rank())
    }
}

impl Key {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Key::Cfa => ".cfa",
            Key::Ra => ".ra",
            Key::Reg(_, name) => name,
        }
    }
}

/// A rule's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value {
    /// `reg + n` (the CFA's rule).
    Plus(&'static str, i64),
    /// The value saved `n` bytes below the CFA: `.cfa n - ^`.
    BelowCfa(i64),
    /// The value saved at `reg + n`.
    At(&'static str, i64),
    /// The value held in a register (`.ra: x30`; a register restored: its own name).
    Reg(&'static str),
    /// Lost: no rule can recover it (`.undef`).
    Undefined,
}

/// A DWARF rule's value: a plain [`Value`], or an expression translated to postfix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rule {
    Value(Value),
    Postfix(Vec<Token>),
}

/// One token of a postfix expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Token {
    /// A register, or `.cfa`.
    Name(&'static str),
    Num(u64),
    /// `+`, `-`, `*`, `@` (align down) or `^` (dereference).
    Op(&'static str),
}

impl Token {
    /// The length of its text.
    pub(crate) fn len(self) -> usize {
        match self {
            Token::Name(s) | Token::Op(s) => s.len(),
            Token::Num(n) => n.checked_ilog10().map_or(1, |d| d as usize + 1),
        }
    }
}

/// One row: its address and its rules, sorted by key.
pub(crate) type Row = (u32, Vec<(Key, Value)>);

/// How rows become STACK CFI records' text, appended to a function's buffer.
pub(crate) trait CfiText: Sync {
    /// `rows` (the first at the function's start) as an INIT record of `len` bytes and
    /// one record per change, naming only what changed. `address` turns a row's RVA
    /// into the address written.
    fn rows(&self, rows: &[Row], len: u32, address: &dyn Fn(u32) -> u64, out: &mut Vec<u8>);

    /// The line of a DWARF CFI row at `address` whose rules are `current`: after a row
    /// whose rules were `prev`, a change record; for the first (`prev` is `None`), an
    /// INIT record of `len` bytes. False, with nothing written, when nothing changed.
    fn row(
        &self,
        out: &mut Vec<u8>,
        address: u64,
        len: u64,
        prev: Option<&[(Key, Rule)]>,
        current: &[(Key, Rule)],
    ) -> bool;

    /// One INIT record holding for all of `[address, address + len)`.
    fn init(&self, out: &mut Vec<u8>, address: u64, len: u64, rules: &[(Key, Value)]);
}

/// A module's unwind tables, rendered into STACK CFI records only when the module is
/// written (in parallel, a bounded chunk of functions at a time).
pub(crate) trait CfiTables: std::fmt::Debug + Send + Sync {
    /// Whether no entry of any table covers code: no record will be written.
    fn is_empty(&self) -> bool;

    /// Writes the records, their text made by `text`; what was left out, and why.
    fn write(
        &self,
        text: &dyn CfiText,
        w: &mut dyn std::io::Write,
    ) -> std::io::Result<crate::error::Warnings>;
}
