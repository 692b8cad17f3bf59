//! What a file is by its first bytes, before anything is mapped or parsed: the magic
//! numbers of object files, of PDBs in either container, and of a dSYM's DWARF file,
//! in one place for the tree walk, the archives' members, the loader and the PDB
//! search. (An archive's kind is told by [`crate::archive`], which alone reads them.)

/// Object-file magic numbers: ELF, Mach-O (both byte orders, 32/64-bit, universal) and
/// PE's `MZ`. Checked before anything is mapped, so that a tree of sources costs one
/// small read per file.
pub(crate) fn looks_like_object(head: &[u8]) -> bool {
    matches!(
        head,
        [0x7F, b'E', b'L', b'F', ..]
            | [0xFE, 0xED, 0xFA, 0xCE | 0xCF, ..]
            | [0xCE | 0xCF, 0xFA, 0xED, 0xFE, ..]
            | [0xCA, 0xFE, 0xBA, 0xBE, ..]
            | [b'M', b'Z', ..]
    )
}

/// True when `head` (a file's first bytes) begins a PDB in either container: MSF, or
/// MSFZ ("PDZ", compressed), which the loader reads as the MSF PDB it holds.
pub(crate) fn starts_like_pdb(head: &[u8]) -> bool {
    head.starts_with(crate::msfz::MSF_MAGIC) || crate::msfz::is_msfz(head)
}

/// Mach-O `MH_DSYM` (file type 10): the DWARF file of a `.dSYM` bundle.
pub(crate) fn is_dsym(data: &[u8]) -> bool {
    let word = |at: usize| data.get(at..at + 4).map(|b| [b[0], b[1], b[2], b[3]]);
    match (word(0), word(12)) {
        (Some([0xCE | 0xCF, 0xFA, 0xED, 0xFE]), Some(t)) => u32::from_le_bytes(t) == 10,
        (Some([0xFE, 0xED, 0xFA, 0xCE | 0xCF]), Some(t)) => u32::from_be_bytes(t) == 10,
        _ => false,
    }
}
