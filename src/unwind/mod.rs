//! STACK CFI: `.eh_frame` and `.debug_frame` (and Mach-O compact unwind, ARM EHABI
//! tables, Windows `.pdata`) turned into rows of unwind rules as values
//! ([`rows`]), which [`crate::breakpad::cfi`] writes as `STACK CFI INIT` / `STACK CFI`
//! records.
//!
//! Extraction only indexes the FDEs. The records are rendered when the module is
//! written: in parallel, a bounded chunk of FDEs at a time, each chunk written in order,
//! so CFI text for tens of thousands of functions is never held in memory and the output
//! does not depend on the thread count. An FDE that cannot be expressed is left out whole
//! and returned by [`CfiSource::write`].

mod compact;
mod exidx;
mod expr;
#[cfg(any(feature = "fuzzing", test))]
pub(crate) mod fuzz;
mod pe_arm64;
mod pe_x64;
mod regs;
mod render;
mod vm;

use std::collections::HashMap;
use std::io::{self, Write};

use gimli::{
    BaseAddresses, CieOrFde, CommonInformationEntry, DebugFrame, EhFrame, Encoding, EndianSlice,
    FrameDescriptionEntry, RunTimeEndian, UnwindSection,
};
use object::{Object as _, ObjectSection as _};
use rayon::prelude::*;

use crate::model::cfi::{self as rows, Key, Rule as RowRule, Value};
pub use regs::CfiArch;
use regs::Numbering;
use render::Renderer;
use vm::{CfaRule, Factors, Rule, RuleSet};

use crate::error::{Warning, WarningKind, Warnings};
use crate::identity::Layout;
use crate::load::Object;
use crate::model::cfi::{CfiTables, CfiText};

type R<'a> = EndianSlice<'a, RunTimeEndian>;

/// FDEs rendered together: enough to keep every core busy, few enough to bound memory.
const CHUNK: usize = 2048;

/// Output bounds, so that a few bytes of crafted unwind tables cannot become gigabytes
/// of STACK CFI (or minutes of work). The largest values seen on real binaries (a
/// Debian system's /usr/lib and /usr/bin, ceph-osd, vmlinux) are noted with each.
///
/// Rows one FDE's program may produce. Real maximum: 1,347 (ceph-osd).
const MAX_ROWS_PER_FDE: usize = 1 << 16;
/// Bytes of STACK CFI one FDE may write: a fixed allowance plus this many per byte of its
/// CIE and FDE (program-counter-dependent PLT rows get their own allowance below). Real
/// FDEs write under 20 bytes per byte of instructions.
const FDE_BASE_BYTES: u64 = 1 << 10;
const FDE_BYTES_PER_INPUT_BYTE: u64 = 64;
/// A CIE's share in each FDE's allowance is capped: one CIE is shared by thousands of
/// FDEs, and real CIEs have a few bytes of initial instructions.
const MAX_CIE_ALLOWANCE: u64 = 256;
/// A PLT row (rules that read the program counter, expanded address by address) changes
/// at most this often: x86 PLT entries change twice per 16 bytes. Real maximum: 6,859
/// rows over 54,880 bytes of `.plt` (libisl), one per 8 bytes.
const PLT_BYTES_PER_ROW: u64 = 4;
const PLT_ROW_BYTES: u64 = 128;
/// STACK CFI of a whole file: a fixed allowance plus this many bytes per byte of the
/// input file. Real files write less than one byte per byte (ceph-osd: 11.8 MB for a
/// 26 MB binary).
const FILE_BASE_BYTES: u64 = 1 << 20;
const FILE_BYTES_PER_INPUT_BYTE: u64 = 16;
/// Bytes of STACK CFI one Windows function may write: its unwind codes (at most 255
/// for x64, 31 words for most arm64 records) each give a row of under 128 bytes.
const PE_FUNCTION_BYTES: u64 = 64 << 10;
/// What the FDEs rendered at once may write in all, by their allowances: bounds memory
/// when each is allowed much.
const CHUNK_BYTES: u64 = 64 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Source {
    // Ordered: where both describe a function, `.eh_frame` (what the runtime unwinder
    // itself uses) wins.
    EhFrame,
    DebugFrame,
}

/// One function's unwind information to write.
#[derive(Debug, Clone, Copy)]
enum Item {
    Fde(FdeRef),
    /// A compact unwind entry, with the stack size read from the code for x86's
    /// "stack indirect" encodings.
    Compact(compact::CompactEntry, Option<u32>),
    /// An ARM `.ARM.exidx` entry, for a function no FDE describes.
    Exidx(exidx::ExidxEntry),
    /// A Windows x64 `.pdata` entry (RVAs) and its start's absolute address, for a
    /// function no FDE describes.
    PeX64(pe_x64::Entry, u64),
    /// A Windows arm64 `.pdata` entry and its start's absolute address, likewise.
    PeArm64(pe_arm64::Entry, u64),
}

impl Item {
    fn start(&self) -> u64 {
        match self {
            Item::Fde(f) => f.start,
            Item::Compact(c, _) => c.start,
            Item::Exidx(e) => e.start,
            Item::PeX64(_, start) | Item::PeArm64(_, start) => *start,
        }
    }

    fn allowance(&self) -> u64 {
        match self {
            Item::Fde(f) => f.allowance,
            Item::Compact(..) | Item::Exidx(_) => FDE_BASE_BYTES,
            // A row per prologue (and arm64 epilogue) instruction: up to 255 codes.
            Item::PeX64(..) | Item::PeArm64(..) => PE_FUNCTION_BYTES,
        }
    }
}

/// One FDE to write.
#[derive(Debug, Clone, Copy)]
struct FdeRef {
    start: u64,
    len: u64,
    source: Source,
    offset: usize,
    /// It lies in a PLT section, where rules may read the program counter.
    in_plt: bool,
    /// Bytes of STACK CFI it may write.
    allowance: u64,
}

/// A section's bytes and address.
#[derive(Debug, Clone, Default)]
struct SectionCopy {
    data: Vec<u8>,
    address: u64,
}

/// The unwind tables of a module, ready to be written as STACK CFI records.
#[derive(Debug, Clone)]
pub struct CfiSource {
    arch: CfiArch,
    endian: RunTimeEndian,
    address_size: u8,
    eh_frame: SectionCopy,
    debug_frame: SectionCopy,
    exidx: exidx::Table,
    extab: exidx::Table,
    /// A PE's sections, for its `.pdata` entries' unwind information.
    pe_image: pe_x64::Image,
    text_address: u64,
    got_address: u64,
    /// Sorted by address, non-overlapping.
    items: Vec<Item>,
    /// Subtracted from every address written.
    bias: u64,
    /// Bytes of STACK CFI the whole file may write, and the file's size it comes from.
    allowance: u64,
    input_len: u64,
}

/// A row's rules: `.cfa` and `.ra` first, then registers by number.
type Rendered = Vec<(rows::Key, rows::Rule)>;

/// Why an FDE is left out.
struct FdeError(String);

/// A reader's typed error, said in the warning that leaves the function's CFI out.
impl<E: std::error::Error> From<E> for FdeError {
    fn from(e: E) -> FdeError {
        FdeError(e.to_string())
    }
}

/// Indexes the unwind tables of `obj`, taking `.eh_frame` or `.debug_frame` from its
/// separate debug file where the binary has none (stripping moves `.debug_frame` there;
/// a debug file's `.eh_frame` is empty). `None` when the architecture has no STACK CFI
/// support or there are no tables.
pub fn extract(
    obj: &Object,
    debug: Option<&Object>,
    arch: &str,
    layout: &Layout,
    bias: u64,
    warnings: &mut Warnings,
) -> Option<CfiSource> {
    let Some(cfi_arch) = CfiArch::from_breakpad(arch) else {
        if obj.file.section_by_name(".eh_frame").is_some() {
            warnings.push(
                WarningKind::Unwind,
                format!("STACK CFI is not supported for architecture {arch}; none written"),
            );
        }
        return None;
    };
    let tables = Tables { obj, debug };
    let mut source = CfiSource {
        arch: cfi_arch,
        endian: if obj.is_big_endian() {
            RunTimeEndian::Big
        } else {
            RunTimeEndian::Little
        },
        address_size: if obj.file.is_64() { 8 } else { 4 },
        eh_frame: tables.copy(".eh_frame", warnings),
        debug_frame: tables.copy(".debug_frame", warnings),
        exidx: exidx::Table::default(),
        extab: exidx::Table::default(),
        pe_image: pe_x64::Image::default(),
        text_address: obj.file.section_by_name(".text").map_or(0, |s| s.address()),
        got_address: obj.file.section_by_name(".got").map_or(0, |s| s.address()),
        items: Vec::new(),
        bias,
        allowance: file_allowance(obj.data.len() as u64),
        input_len: obj.data.len() as u64,
    };
    let plt = plt_ranges(obj);
    let compact = compact_entries(obj, cfi_arch, layout, warnings);
    let mut exidx = Vec::new();
    if cfi_arch == CfiArch::Arm {
        source.exidx = tables.exidx(".ARM.exidx", warnings);
        source.extab = tables.exidx(".ARM.extab", warnings);
        exidx = exidx::entries(&source.exidx, |start| layout.code_span_end(start));
    }
    let mut pdata = Vec::new();
    if obj.file.format() == object::BinaryFormat::Pe {
        (source.pe_image, pdata) = pe_entries(obj, cfi_arch, layout.load_address, warnings);
    }
    if source.eh_frame.data.is_empty()
        && source.debug_frame.data.is_empty()
        && compact.is_empty()
        && exidx.is_empty()
        && pdata.is_empty()
    {
        return None;
    }
    let fdes = source.index(layout, &plt, warnings);
    let mut others: Vec<Item> = compact
        .into_iter()
        .map(|(c, s)| Item::Compact(c, s))
        .collect();
    others.extend(exidx.into_iter().map(Item::Exidx));
    others.extend(pdata);
    source.items = merge_items(fdes, others);
    Some(source)
}

/// Where a module's unwind tables are: the binary, then its debug file.
struct Tables<'o, 'a> {
    obj: &'o Object<'a>,
    debug: Option<&'o Object<'a>>,
}

impl Tables<'_, '_> {
    /// A copy of the section `name` of the first file that has it with data.
    fn copy(&self, name: &str, warnings: &mut Warnings) -> SectionCopy {
        for source in std::iter::once(self.obj).chain(self.debug) {
            if !source.section_has_data(name) {
                continue;
            }
            let data = source.section_data(name, warnings);
            if !data.is_empty() {
                return SectionCopy {
                    data: data.into_owned(),
                    address: source.file.section_by_name(name).map_or(0, |s| s.address()),
                };
            }
        }
        SectionCopy::default()
    }

    /// ARM's index table or exception table, `name`.
    fn exidx(&self, name: &str, warnings: &mut Warnings) -> exidx::Table {
        let data = self.copy(name, warnings);
        exidx::Table {
            data: data.data,
            address: data.address,
            big_endian: self.obj.is_big_endian(),
        }
    }
}

/// The FDEs kept, with the entries of the other tables (compact unwind, ARM's index
/// table, `.pdata`) for functions no FDE describes, in address order. An FDE's rows are
/// more precise than the one rule of a compact encoding; ARM's entries describe only
/// function bodies; Windows x64's codes describe prologues only.
fn merge_items(fdes: Vec<FdeRef>, others: Vec<Item>) -> Vec<Item> {
    let covered = |start: u64| {
        let i = fdes.partition_point(|f| f.start <= start);
        i > 0 && start < fdes[i - 1].start.saturating_add(fdes[i - 1].len)
    };
    let others: Vec<Item> = others
        .into_iter()
        .filter(|item| !covered(item.start()))
        .collect();
    let mut items: Vec<Item> = fdes.into_iter().map(Item::Fde).collect();
    items.extend(others);
    // Stable: the order is by address only; no two kinds of entry share one.
    items.sort_by_key(Item::start);
    // An index entry reaches up to the next entry of its table; an FDE may start
    // before that.
    for i in 1..items.len() {
        let next = items[i].start();
        match &mut items[i - 1] {
            Item::Exidx(e) => e.end = e.end.min(next),
            // So does an arm64 `.xdata` record's length, which `.pdata` does not bound.
            Item::PeArm64(e, start) => {
                e.limit = u32::try_from(next.saturating_sub(*start)).unwrap_or(u32::MAX);
            }
            _ => {}
        }
    }
    items
}

/// The `.pdata` entries of an x64 or arm64 PE, as items at their absolute addresses,
/// and the sections their unwind information is in.
fn pe_entries(
    obj: &Object,
    arch: CfiArch,
    image_base: u64,
    warnings: &mut Warnings,
) -> (pe_x64::Image, Vec<Item>) {
    let Some(pdata) = obj.file.section_by_name(".pdata") else {
        return Default::default();
    };
    let bytes = match pdata.data() {
        Ok(b) => b,
        Err(e) => {
            let why = format!(".pdata: {e}; no STACK CFI from it");
            warnings.add(Warning::new(WarningKind::Unwind, why).on(".pdata"));
            return Default::default();
        }
    };
    let va = |rva: u32| image_base.wrapping_add(u64::from(rva));
    // `(start, the RVA its unwind information is at)` for choosing the sections to keep.
    let (items, unwind_rvas): (Vec<Item>, Vec<u32>) = match arch {
        CfiArch::X86_64 => {
            let mut raw = pe_x64::entries(bytes);
            // By address, without overlaps: the table is sorted in valid images.
            raw.sort_by_key(|e| e.start);
            raw.dedup_by(|b, a| b.start < a.end);
            raw.iter()
                .map(|e| (Item::PeX64(*e, va(e.start)), e.unwind & !1))
                .unzip()
        }
        CfiArch::Arm64 => {
            let mut raw = pe_arm64::entries(bytes);
            // By address, one entry per start.
            raw.sort_by_key(|e| e.start);
            raw.dedup_by_key(|e| e.start);
            raw.iter()
                .map(|e| (Item::PeArm64(*e, va(e.start)), e.xdata().unwrap_or(0)))
                .unzip()
        }
        _ => return Default::default(),
    };
    let mut sections: Vec<(u32, Vec<u8>)> = Vec::new();
    for section in obj.file.sections() {
        let Ok(rva) = u32::try_from(section.address().wrapping_sub(image_base)) else {
            continue;
        };
        let end = rva.saturating_add(u32::try_from(section.size()).unwrap_or(u32::MAX));
        // Only sections unwind information points into are kept.
        if !unwind_rvas.iter().any(|u| (rva..end).contains(u)) {
            continue;
        }
        if let Ok(data) = section.data() {
            sections.push((rva, data.to_vec()));
        }
    }
    // By RVA, for the binary search in `Image::read`.
    sections.sort_by_key(|s| s.0);
    (
        pe_x64::Image {
            sections,
            base: image_base,
        },
        items,
    )
}

/// The compact unwind entries of a Mach-O image that carry rules (not those deferring
/// to `__eh_frame`), with x86's indirect stack sizes read from the code.
fn compact_entries(
    obj: &Object,
    arch: CfiArch,
    layout: &Layout,
    warnings: &mut Warnings,
) -> Vec<(compact::CompactEntry, Option<u32>)> {
    let Some(section) = obj
        .file
        .section_by_name("__unwind_info")
        .filter(|_| obj.section_has_data("__unwind_info"))
    else {
        return Vec::new();
    };
    let data = match section.data() {
        Ok(d) => d,
        Err(e) => {
            let why = format!("__unwind_info: {e}");
            warnings.add(Warning::new(WarningKind::Unwind, why).on("__unwind_info"));
            return Vec::new();
        }
    };
    let entries = match compact::entries(data, layout.load_address) {
        Ok(e) => e,
        Err(e) => {
            warnings.add(Warning::new(WarningKind::Unwind, e.to_string()).on("__unwind_info"));
            return Vec::new();
        }
    };
    let read_u32 = |address: u64| -> Option<u32> {
        let s = obj.file.sections().find(|s| {
            s.address() <= address
                && address.saturating_add(4) <= s.address().saturating_add(s.size())
        })?;
        let bytes = s.data().ok()?;
        let at = usize::try_from(address - s.address()).ok()?;
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    let mut out = Vec::new();
    for e in entries {
        if layout.code_span_end(e.start).is_none() {
            continue;
        }
        // Only x86's stack-indirect encodings read the code, at a fixed offset.
        let stack_indirect = matches!(arch, CfiArch::X86 | CfiArch::X86_64)
            && e.encoding & 0x0F00_0000 == 0x0300_0000;
        let indirect = if stack_indirect {
            read_u32(e.start.wrapping_add(u64::from((e.encoding >> 16) & 0xFF)))
        } else {
            None
        };
        match compact::decode(arch, e.encoding, |_| indirect) {
            Ok(compact::Decoded::Rules(_)) => out.push((e, indirect)),
            Ok(compact::Decoded::Dwarf) => {}
            Err(why) => {
                let why = format!(
                    "compact unwind for the function at {:#x} (encoding {:#010x}): {why}; left out",
                    e.start, e.encoding
                );
                let warning = Warning::new(WarningKind::Unwind, why);
                warnings.add(warning.on("__unwind_info").at(e.start));
            }
        }
    }
    out
}

/// The address ranges of the PLT sections (lazy-binding stubs), the only code whose
/// unwind rules may read the program counter. Only sections with their bytes in the file
/// count, up to the file's size in all: a crafted header cannot claim terabytes of PLT.
fn plt_ranges(obj: &Object) -> Vec<(u64, u64)> {
    const NAMES: [&str; 8] = [
        ".plt",
        ".plt.sec",
        ".plt.got",
        ".plt.bnd",
        ".iplt",
        "__stubs",
        "__stub_helper",
        "__auth_stubs",
    ];
    let mut budget = obj.data.len() as u64;
    let mut out = Vec::new();
    for section in obj.file.sections() {
        if !section.name().is_ok_and(|n| NAMES.contains(&n)) {
            continue;
        }
        let Some((_, size)) = section.file_range() else {
            continue;
        };
        if size > budget {
            break;
        }
        budget -= size;
        if let Some(end) = section.address().checked_add(size) {
            out.push((section.address(), end));
        }
    }
    out
}

/// Indexes the FDEs of one section that cover code.
fn collect<'a, S: UnwindSection<R<'a>>>(
    section: &S,
    bases: &BaseAddresses,
    source: Source,
    layout: &Layout,
    plt: &[(u64, u64)],
    out: &mut Vec<FdeRef>,
    warnings: &mut Warnings,
) {
    let name = match source {
        Source::EhFrame => ".eh_frame",
        Source::DebugFrame => ".debug_frame",
    };
    let mut cies: HashMap<usize, CommonInformationEntry<R<'a>>> = HashMap::new();
    let mut entries = section.entries(bases);
    let mut bad = 0usize;
    loop {
        let entry = match entries.next() {
            Ok(Some(e)) => e,
            Ok(None) => break,
            Err(e) => {
                let why = format!("{name}: {e}; the entries after this point are skipped");
                warnings.add(Warning::new(WarningKind::Unwind, why).on(name));
                break;
            }
        };
        let CieOrFde::Fde(partial) = entry else {
            continue;
        };
        let fde = partial.parse(|s, b, offset| {
            let key: usize = gimli::UnwindOffset::into(offset);
            if let Some(cie) = cies.get(&key) {
                return Ok(cie.clone());
            }
            let cie = s.cie_from_offset(b, offset)?;
            cies.insert(key, cie.clone());
            Ok(cie)
        });
        let fde = match fde {
            Ok(f) => f,
            Err(_) => {
                bad += 1;
                continue;
            }
        };
        let (start, len) = (fde.initial_address(), fde.len());
        // Zero-length FDEs, and FDEs left at address 0 or a tombstone for code the linker
        // dropped, describe nothing.
        if len == 0
            || layout.code_span_end(start).is_none()
            || (start == 0 && layout.code_spans.is_empty())
        {
            continue;
        }
        let in_plt = start
            .checked_add(len)
            .is_some_and(|end| plt.iter().any(|&(lo, hi)| lo <= start && end <= hi));
        let input = (fde.entry_len() as u64)
            .saturating_add((fde.cie().entry_len() as u64).min(MAX_CIE_ALLOWANCE));
        let mut allowance =
            FDE_BASE_BYTES.saturating_add(FDE_BYTES_PER_INPUT_BYTE.saturating_mul(input));
        if in_plt {
            allowance = allowance.saturating_add(plt_rows(len).saturating_mul(PLT_ROW_BYTES));
        }
        out.push(FdeRef {
            start,
            len,
            source,
            offset: fde.offset(),
            in_plt,
            allowance,
        });
    }
    if bad > 0 {
        let why = format!("{name}: {bad} unreadable FDEs skipped");
        warnings.add(Warning::new(WarningKind::Unwind, why).on(name));
    }
}

impl CfiTables for CfiSource {
    fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    fn write(&self, text: &dyn CfiText, w: &mut dyn Write) -> io::Result<Warnings> {
        self.write_all(text, w)
    }
}

impl CfiSource {
    /// The FDEs of both sections that cover code, by address, without overlaps.
    fn index(&self, layout: &Layout, plt: &[(u64, u64)], warnings: &mut Warnings) -> Vec<FdeRef> {
        let bases = self.bases();
        let mut fdes = Vec::new();
        let eh = self.configure_eh(EhFrame::from(self.reader(&self.eh_frame.data)));
        collect(
            &eh,
            &bases,
            Source::EhFrame,
            layout,
            plt,
            &mut fdes,
            warnings,
        );
        let debug_frame =
            self.configure_debug(DebugFrame::from(self.reader(&self.debug_frame.data)));
        collect(
            &debug_frame,
            &bases,
            Source::DebugFrame,
            layout,
            plt,
            &mut fdes,
            warnings,
        );
        // By address, then `.eh_frame` first, so that a function both sections describe
        // is written once, from `.eh_frame`, and the output order is fixed.
        fdes.sort_by_key(|f| (f.start, f.source));
        let mut kept: Vec<FdeRef> = Vec::with_capacity(fdes.len());
        for f in fdes {
            if kept
                .last()
                .is_some_and(|p| f.start < p.start.saturating_add(p.len))
            {
                continue;
            }
            kept.push(f);
        }
        kept
    }

    fn bases(&self) -> BaseAddresses {
        BaseAddresses::default()
            .set_eh_frame(self.eh_frame.address)
            .set_text(self.text_address)
            .set_got(self.got_address)
    }

    fn reader<'a>(&self, data: &'a [u8]) -> R<'a> {
        EndianSlice::new(data, self.endian)
    }

    fn configure_eh<'a>(&self, mut s: EhFrame<R<'a>>) -> EhFrame<R<'a>> {
        s.set_address_size(self.address_size);
        if self.arch == CfiArch::Arm64 {
            s.set_vendor(gimli::Vendor::AArch64);
        }
        s
    }

    fn configure_debug<'a>(&self, mut s: DebugFrame<R<'a>>) -> DebugFrame<R<'a>> {
        s.set_address_size(self.address_size);
        if self.arch == CfiArch::Arm64 {
            s.set_vendor(gimli::Vendor::AArch64);
        }
        s
    }

    /// Writes every FDE as STACK CFI records, in the text `text` makes of rows; what was
    /// left out, and why (unwind records that cannot be expressed are only found while
    /// they are rendered).
    fn write_all(&self, text: &dyn CfiText, w: &mut dyn Write) -> io::Result<Warnings> {
        let mut skipped = Warnings::default();
        let mut written = 0u64;
        let mut rest = &self.items[..];
        'chunks: while !rest.is_empty() {
            // Rendered at once: up to CHUNK functions whose allowances stay within
            // CHUNK_BYTES, so that memory is bounded whatever each may write.
            let mut n = 1;
            let mut total = rest[0].allowance();
            while n < rest.len()
                && n < CHUNK
                && total.saturating_add(rest[n].allowance()) <= CHUNK_BYTES
            {
                total += rest[n].allowance();
                n += 1;
            }
            let (chunk, tail) = rest.split_at(n);
            // Rendered in parallel into one buffer per function, written in address order.
            let rendered: Vec<Result<Vec<u8>, FdeError>> = chunk
                .par_iter()
                .map(|item| {
                    let mut buf = Vec::with_capacity(256);
                    let result = match item {
                        Item::Fde(f) => self.write_fde(f, text, &mut buf),
                        Item::Compact(c, indirect) => {
                            self.write_compact(c, *indirect, text, &mut buf)
                        }
                        Item::Exidx(e) => self.write_exidx(e, text, &mut buf),
                        Item::PeX64(e, _) => self.write_pe_x64(e, text, &mut buf),
                        Item::PeArm64(e, _) => self.write_pe_arm64(e, text, &mut buf),
                    };
                    result.map(|()| buf)
                })
                .collect();
            for (i, (item, r)) in chunk.iter().zip(rendered).enumerate() {
                match r {
                    Ok(buf) if written + buf.len() as u64 > self.allowance => {
                        // Decided in address order, so the cut is the same on every run.
                        let why = format!(
                            "STACK CFI stops at the function at {:#x}: {written} bytes written, near the most a {}-byte file may produce; the {} functions from there have no CFI",
                            item.start(),
                            self.input_len,
                            rest.len() - i
                        );
                        skipped.add(Warning::new(WarningKind::Output, why).at(item.start()));
                        break 'chunks;
                    }
                    Ok(buf) => {
                        written += buf.len() as u64;
                        w.write_all(&buf)?;
                    }
                    Err(FdeError(why)) => {
                        let why = format!(
                            "STACK CFI for the function at {:#x}: {why}; its CFI is left out",
                            item.start()
                        );
                        skipped.add(Warning::new(WarningKind::Unwind, why).at(item.start()));
                    }
                }
            }
            rest = tail;
        }
        Ok(skipped)
    }

    /// A compact unwind entry: one INIT record for the whole function.
    fn write_compact(
        &self,
        c: &compact::CompactEntry,
        indirect: Option<u32>,
        text: &dyn CfiText,
        w: &mut Vec<u8>,
    ) -> Result<(), FdeError> {
        let rules = match compact::decode(self.arch, c.encoding, |_| indirect)? {
            compact::Decoded::Rules(r) => r,
            compact::Decoded::Dwarf => return Ok(()),
        };
        self.write_init(text, w, c.start, c.end, rules)
    }

    /// An ARM index table entry: one INIT record for the whole function, or none when
    /// it cannot be unwound.
    fn write_exidx(
        &self,
        e: &exidx::ExidxEntry,
        text: &dyn CfiText,
        w: &mut Vec<u8>,
    ) -> Result<(), FdeError> {
        let rules = match exidx::decode(&self.exidx, &self.extab, e)? {
            exidx::Unwind::Rules(r) => r,
            exidx::Unwind::Refused => return Ok(()),
        };
        self.write_init(text, w, e.start, e.end, rules)
    }

    /// A Windows x64 function: an INIT record, then one per prologue instruction.
    fn write_pe_x64(
        &self,
        e: &pe_x64::Entry,
        text: &dyn CfiText,
        w: &mut Vec<u8>,
    ) -> Result<(), FdeError> {
        let rows = pe_x64::rows(&self.pe_image, e)?;
        self.write_pe_rows(e.end - e.start, &rows, text, w)
    }

    /// A Windows arm64 function: an INIT record, then one per prologue and epilogue
    /// instruction.
    fn write_pe_arm64(
        &self,
        e: &pe_arm64::Entry,
        text: &dyn CfiText,
        w: &mut Vec<u8>,
    ) -> Result<(), FdeError> {
        let (len, rows) = pe_arm64::rows(&self.pe_image, e)?;
        self.write_pe_rows(len, &rows, text, w)
    }

    /// Rows at RVAs, written at module-relative addresses.
    fn write_pe_rows(
        &self,
        len: u32,
        rows: &[rows::Row],
        text: &dyn CfiText,
        w: &mut Vec<u8>,
    ) -> Result<(), FdeError> {
        let base = self.pe_image.base;
        let address = |rva: u32| base.wrapping_add(u64::from(rva)).wrapping_sub(self.bias);
        text.rows(rows, len, &address, w);
        Ok(())
    }

    /// One `STACK CFI INIT` record holding for all of `[start, end)`.
    fn write_init(
        &self,
        text: &dyn CfiText,
        w: &mut Vec<u8>,
        start: u64,
        end: u64,
        rules: Vec<(Key, Value)>,
    ) -> Result<(), FdeError> {
        let address = start.wrapping_sub(self.bias);
        text.init(w, address, end.wrapping_sub(start), &rules);
        Ok(())
    }

    fn write_fde(&self, f: &FdeRef, text: &dyn CfiText, w: &mut Vec<u8>) -> Result<(), FdeError> {
        let bases = self.bases();
        match f.source {
            Source::EhFrame => {
                let s = self.configure_eh(EhFrame::from(self.reader(&self.eh_frame.data)));
                let fde =
                    s.fde_from_offset(&bases, f.offset.into(), |s, b, o| s.cie_from_offset(b, o))?;
                self.render(&s, &bases, &fde, f, text, w)
            }
            Source::DebugFrame => {
                let s = self.configure_debug(DebugFrame::from(self.reader(&self.debug_frame.data)));
                let fde =
                    s.fde_from_offset(&bases, f.offset.into(), |s, b, o| s.cie_from_offset(b, o))?;
                self.render(&s, &bases, &fde, f, text, w)
            }
        }
    }

    /// Runs an FDE's program and writes its INIT record and one record per change, at
    /// most its allowance in bytes. Rules that read the program counter are expanded
    /// address by address, only in a PLT.
    fn render<'a, S: UnwindSection<R<'a>>>(
        &self,
        section: &S,
        bases: &BaseAddresses,
        fde: &FrameDescriptionEntry<R<'a>>,
        item: &FdeRef,
        text: &dyn CfiText,
        w: &mut Vec<u8>,
    ) -> Result<(), FdeError> {
        let ra = fde.cie().return_address_register().0;
        let rows = run_programs(section, bases, fde)?;
        let cx = Renderer {
            arch: self.arch,
            numbering: Numbering::for_cie(self.arch, ra),
            encoding: Encoding {
                format: gimli::Format::Dwarf32,
                version: 4,
                address_size: self.address_size,
            },
            ra,
        };
        let mut plt = PltBudget {
            limit: plt_rows(fde.len()),
            expanded: 0,
        };
        let mut prev: Option<Rendered> = None;
        for (start, end, rules) in rows {
            let expanded = cx.expand(section, &rules, (start, end), item.in_plt, &mut plt)?;
            for (address, current) in expanded {
                let address = address.wrapping_sub(self.bias);
                if text.row(w, address, fde.len(), prev.as_deref(), &current)
                    && w.len() as u64 > item.allowance
                {
                    return Err(FdeError(format!(
                        "its STACK CFI would exceed {} bytes, {FDE_BYTES_PER_INPUT_BYTE} per byte of its CIE and FDE",
                        item.allowance
                    )));
                }
                prev = Some(current);
            }
        }
        Ok(())
    }
}

/// The rows of an FDE: its CIE's initial instructions, then its own, run by the CFA
/// virtual machine; each row's address range and rules.
fn run_programs<'a, S: UnwindSection<R<'a>>>(
    section: &S,
    bases: &BaseAddresses,
    fde: &FrameDescriptionEntry<R<'a>>,
) -> Result<Vec<(u64, u64, RuleSet)>, FdeError> {
    let cie = fde.cie();
    let factors = Factors {
        code_alignment: cie.code_alignment_factor(),
        data_alignment: cie.data_alignment_factor(),
    };
    let initial = initial_rules(section, bases, cie, &factors)?;
    let mut state = initial.clone();
    let mut rows: Vec<(u64, u64, RuleSet)> = Vec::new();
    let mut too_many = false;
    let mut program = fde.instructions(section, bases);
    let range = (fde.initial_address(), fde.end_address());
    vm::run(
        || program.next(),
        &factors,
        &mut state,
        Some(&initial),
        Some(range),
        &mut |start, end, rules| {
            if rows.len() < MAX_ROWS_PER_FDE {
                rows.push((start, end, rules.clone()));
            } else {
                too_many = true;
            }
        },
    )?;
    if too_many {
        return Err(FdeError(format!("more than {MAX_ROWS_PER_FDE} rows")));
    }
    Ok(rows)
}

/// The rules a CIE's initial instructions set up, where every FDE of it starts.
fn initial_rules<'a, S: UnwindSection<R<'a>>>(
    section: &S,
    bases: &BaseAddresses,
    cie: &gimli::CommonInformationEntry<R<'a>>,
    factors: &Factors,
) -> Result<RuleSet, FdeError> {
    let mut state = RuleSet {
        cfa: CfaRule::RegisterOffset(0, 0),
        regs: Vec::new(),
    };
    let mut program = cie.instructions(section, bases);
    vm::run(
        || program.next(),
        factors,
        &mut state,
        None,
        None,
        &mut |_, _, _| {},
    )?;
    Ok(state)
}

/// How many distinct rows an FDE's program-counter-dependent rules may expand to, and
/// how many they have.
struct PltBudget {
    limit: u64,
    expanded: u64,
}

/// Bytes of STACK CFI a file of `input_len` bytes may write.
pub(crate) fn file_allowance(input_len: u64) -> u64 {
    FILE_BASE_BYTES.saturating_add(FILE_BYTES_PER_INPUT_BYTE.saturating_mul(input_len))
}

/// How many rows a PLT FDE covering `len` bytes may have.
fn plt_rows(len: u64) -> u64 {
    len / PLT_BYTES_PER_ROW + 16
}

fn skip(e: expr::ExprError) -> FdeError {
    match e {
        expr::ExprError::NeedsPc => FdeError("a rule needs the program counter".into()),
        expr::ExprError::Unsupported(what) => {
            FdeError(format!("a DWARF expression has no postfix form ({what})"))
        }
    }
}

#[cfg(test)]
mod tests;
