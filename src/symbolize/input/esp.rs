//! ESP-IDF's panic output (ESP32, ESP32-S2/S3): `Backtrace: 0x400d1234:0x3ffb1230
//! 0x400d5678:0x3ffb1250 …`, each frame a PC and a stack pointer, several on one line.
//! The PCs are absolute addresses in the firmware, which runs where it was linked, and
//! callers' are already moved back into the call (`esp_cpu_process_stack_pc` subtracts
//! 3): each is looked up as printed.

use std::ops::Range;

use crate::symbolize::scan;

/// The most frames one line is read for: ESP-IDF prints at most 100.
const MAX_FRAMES: usize = 1024;

/// The PCs of a `Backtrace:` line and where each stands in it; None for any other
/// line.
pub fn backtrace(line: &str) -> Option<Vec<(u64, Range<usize>)>> {
    let at = scan::find(line, "Backtrace:")?;
    let before = line[..at].trim();
    // Alone on its line, or behind a log prefix that ends in `:` or `]`.
    if !(before.is_empty() || before.ends_with(':') || before.ends_with(']')) {
        return None;
    }
    let mut frames = Vec::new();
    let rest = &line[at + "Backtrace:".len()..];
    for word in rest.split_whitespace() {
        // `|<-CORRUPTED` ends what can be trusted.
        if word.starts_with('|') || frames.len() == MAX_FRAMES {
            break;
        }
        let (pc, sp) = word.split_once(':')?;
        let pc = super::parse_hex(pc.strip_prefix("0x")?)?;
        super::parse_hex(sp.strip_prefix("0x")?)?;
        let start = word.as_ptr() as usize - line.as_ptr() as usize;
        frames.push((pc, start..start + word.len()));
    }
    (!frames.is_empty()).then_some(frames)
}

/// The firmware's identity an ESP-IDF panic prints after its backtrace: `ELF file
/// SHA256: 5f1e0a9c2b3d4e6f`, the first hex digits of the ELF's SHA-256.
pub fn elf_sha256(line: &str) -> Option<&str> {
    let at = scan::find(line, "ELF file SHA256:")?;
    let hex = line[at + "ELF file SHA256:".len()..]
        .split_whitespace()
        .next()?;
    (hex.len() >= 8 && hex.len() <= 64 && super::is_hex(hex)).then_some(hex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn esp_idf_backtraces() {
        let line = "Backtrace: 0x400d1234:0x3ffb1230 0x400d5678:0x3ffb1250 |<-CORRUPTED";
        let pcs: Vec<u64> = backtrace(line).unwrap().into_iter().map(|f| f.0).collect();
        assert_eq!(pcs, [0x400d1234, 0x400d5678]);
        let f = backtrace("I (123) esp: Backtrace:0x400d1234:0x3ffb1230").unwrap();
        assert_eq!(
            &"I (123) esp: Backtrace:0x400d1234:0x3ffb1230"[f[0].1.clone()],
            "0x400d1234:0x3ffb1230"
        );
        for not in ["Backtrace: none", "no Backtrace: 0x1:0x2", "Backtrace:"] {
            assert_eq!(backtrace(not), None, "{not}");
        }
        assert_eq!(
            elf_sha256("ELF file SHA256: 5f1e0a9c2b3d4e6f"),
            Some("5f1e0a9c2b3d4e6f")
        );
        assert_eq!(elf_sha256("ELF file SHA256: nope"), None);
    }
}
