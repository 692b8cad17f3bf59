//! The unwind readers' entry points for the fuzz targets (see [`crate::fuzzing`]) and
//! the tests: whole sections in, rows and rules out (their text is breakpad/'s).

use super::*;

/// Indexes and renders `data` as a whole `.eh_frame` (or `.debug_frame`) section of a
/// little-endian `arch` image whose code is everywhere and the first 64 KiB of it a PLT:
/// the STACK CFI it gives and the FDEs left out. For the fuzz targets (see
/// [`crate::fuzzing`]).
pub(crate) fn render_section(
    data: &[u8],
    debug_frame: bool,
    arch: CfiArch,
    text: &dyn CfiText,
) -> (Vec<u8>, Vec<String>) {
    let section = SectionCopy {
        data: data.to_vec(),
        address: 0x1000,
    };
    let mut source = CfiSource {
        arch,
        endian: RunTimeEndian::Little,
        address_size: if matches!(arch, CfiArch::X86 | CfiArch::Ppc | CfiArch::Arm) {
            4
        } else {
            8
        },
        eh_frame: if debug_frame {
            SectionCopy::default()
        } else {
            section.clone()
        },
        debug_frame: if debug_frame {
            section
        } else {
            SectionCopy::default()
        },
        exidx: exidx::Table::default(),
        extab: exidx::Table::default(),
        pe_image: pe_x64::Image::default(),
        text_address: 0x1000,
        got_address: 0,
        items: Vec::new(),
        bias: 0,
        allowance: file_allowance(data.len() as u64),
        input_len: data.len() as u64,
    };
    let layout = Layout {
        load_address: 0,
        code_spans: Vec::new(),
    };
    let mut warnings = Warnings::default();
    source.items = source
        .index(&layout, &[(0, 1 << 16)], &mut warnings)
        .into_iter()
        .map(Item::Fde)
        .collect();
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    warnings.extend(source.write_all(text, &mut out).unwrap_or_default());
    (out, warnings.into_iter().map(|w| w.message).collect())
}

/// Translates `expr` as a CFA or register rule of `arch`, at `pc` if given. For the fuzz
/// targets.
pub(crate) fn translate_expression(
    expr: &[u8],
    arch: CfiArch,
    pc: Option<u64>,
) -> Option<Vec<rows::Token>> {
    let cx = expr::ExprContext {
        arch,
        numbering: Numbering::Gcc,
        encoding: Encoding {
            format: gimli::Format::Dwarf32,
            version: 4,
            address_size: if matches!(arch, CfiArch::X86 | CfiArch::Ppc) {
                4
            } else {
                8
            },
        },
        pc,
    };
    let expr = gimli::Expression(EndianSlice::new(expr, RunTimeEndian::Little));
    let cfa = expr::translate(expr, &cx, false).ok();
    let rule = expr::translate(expr, &cx, true).ok();
    cfa.or(rule)
}

/// Decodes every entry of `exidx` (a `.ARM.exidx` section at 0x8000, with `extab` as its
/// `.ARM.extab` at 0x9000, in code that ends at 0x8000): the rules of those that unwind.
/// For the fuzz targets.
pub(crate) fn decode_exidx(exidx: &[u8], extab: &[u8]) -> Vec<Vec<(Key, Value)>> {
    let table = |data: &[u8], address| exidx::Table {
        data: data.to_vec(),
        address,
        big_endian: false,
    };
    let (exidx, extab) = (table(exidx, 0x8000), table(extab, 0x9000));
    exidx::entries(&exidx, |start| (start < 0x8000).then_some(0x8000))
        .iter()
        .filter_map(|e| match exidx::decode(&exidx, &extab, e) {
            Ok(exidx::Unwind::Rules(r)) => Some(r),
            _ => None,
        })
        .collect()
}

/// One function's rows as offsets from its start, or why it has none.
pub(crate) type PeRows = Result<Vec<(u32, Vec<(Key, Value)>)>, crate::error::Reason>;

/// Reads `pdata` as a Windows `.pdata` table (x64 or arm64) whose unwind information
/// is in `image`, a section at RVA 0x2000, and returns each entry's rows. For the fuzz
/// targets.
pub(crate) fn pe_rows(pdata: &[u8], image: &[u8], arm64: bool) -> Vec<PeRows> {
    let image = pe_x64::Image {
        sections: vec![(0x2000, image.to_vec())],
        base: 0,
    };
    let relative = |start: u32, rows: Vec<rows::Row>| -> Vec<(u32, Vec<(Key, Value)>)> {
        rows.into_iter()
            .map(|(a, r)| (a.wrapping_sub(start), r))
            .collect()
    };
    if arm64 {
        pe_arm64::entries(pdata)
            .iter()
            .map(|e| {
                pe_arm64::rows(&image, e)
                    .map(|(_, rows)| relative(e.start, rows))
                    .map_err(Into::into)
            })
            .collect()
    } else {
        pe_x64::entries(pdata)
            .iter()
            .map(|e| {
                pe_x64::rows(&image, e)
                    .map(|rows| relative(e.start, rows))
                    .map_err(Into::into)
            })
            .collect()
    }
}

/// Decodes `data` as a Mach-O `__unwind_info` section and every entry's encoding for
/// each architecture compact unwind has. For the fuzz targets.
pub(crate) fn decode_compact(data: &[u8]) -> usize {
    let Ok(entries) = compact::entries(data, 0x1_0000_0000) else {
        return 0;
    };
    let mut decoded = 0;
    for e in &entries {
        for arch in [CfiArch::X86, CfiArch::X86_64, CfiArch::Arm64] {
            decoded += usize::from(compact::decode(arch, e.encoding, |_| Some(e.encoding)).is_ok());
        }
    }
    decoded
}
