//! A unit's functions and inlined calls as the walk finds them, before lines are
//! attached and they are cut into pieces; and the bounds on what a unit may expand to.

/// `[start, end)` of a DIE's ranges in the unit's [`Drafts::ranges`].
pub(super) type Span = (u32, u32);

pub(super) struct SiteDraft {
    /// The function it is in (in [`Drafts::funcs`]).
    pub(super) func: u32,
    pub(super) depth: u32,
    pub(super) origin: usize,
    pub(super) call_file: Option<u64>,
    pub(super) call_line: u32,
    pub(super) ranges: Span,
}

pub(super) struct FuncDraft {
    pub(super) die: usize,
    pub(super) ranges: Span,
    /// Its inlined calls in [`Drafts::sites`], once they are grouped.
    pub(super) sites: Span,
}

/// A unit's functions as the walk finds them. Their ranges share one buffer: a large
/// program has millions of inlined calls, and one allocation each was a tenth of the
/// walk's time.
#[derive(Default)]
pub(super) struct Drafts {
    pub(super) funcs: Vec<FuncDraft>,
    /// The inlined calls of all functions, in the walk's order until
    /// [`Drafts::group_sites`] groups them by function (each function's in pre-order):
    /// a vector per function, grown by doubling, was a reallocation per few sites.
    pub(super) sites: Vec<SiteDraft>,
    pub(super) ranges: Vec<(u64, u64)>,
    /// How many ranges `ranges` may hold (see [`MAX_RANGES_PER_UNIT_BYTE`]).
    pub(super) ranges_limit: usize,
    /// Bounds that were reached, for one warning each.
    pub(super) ranges_cut: bool,
    pub(super) depth_cut: bool,
}

/// Bounds on what one unit may expand to, so that a few bytes of crafted DWARF cannot
/// become gigabytes of records; each is far above what real compilers produce (the
/// largest values seen on a Debian system's /usr/lib and /usr/bin, ceph-osd, vmlinux and
/// Mozilla's dump_syms are noted).
///
/// Address ranges kept for a unit's DIEs: this many per byte of the unit, plus
/// [`BASE_RANGES`]. Range lists are shared, so without a bound every DIE of a unit could
/// name the same list of a million ranges. Real units need well under one per byte.
pub(super) const MAX_RANGES_PER_UNIT_BYTE: usize = 4;
pub(super) const BASE_RANGES: usize = 1 << 16;
/// FUNC records (contiguous ranges) of one function. Real maximum: a handful (hot and
/// cold parts); each FUNC re-clips every inlined call, so this bounds that work too.
pub(super) const MAX_PIECES_PER_FUNCTION: usize = 4096;
/// Nesting of inlined calls. Real maximum: 46 (ceph-osd).
pub(super) const MAX_INLINE_DEPTH: u32 = 512;
/// Line records written for a unit: this many per row of its line table, plus
/// [`BASE_RANGES`]. Each row belongs to one function unless functions overlap, which only
/// damaged or crafted DWARF does at scale.
pub(super) const MAX_LINES_PER_ROW: usize = 2;

impl Drafts {
    pub(super) fn ranges(&self, span: Span) -> &[(u64, u64)] {
        self.ranges
            .get(span.0 as usize..span.1 as usize)
            .unwrap_or_default()
    }

    pub(super) fn sites(&self, span: Span) -> &[SiteDraft] {
        self.sites
            .get(span.0 as usize..span.1 as usize)
            .unwrap_or_default()
    }

    /// Groups the sites by function, each function's in the walk's order (a stable
    /// sort: a function's sites are already together, but for those of a function
    /// nested in it), and points each function at its own.
    pub(super) fn group_sites(&mut self) {
        self.sites.sort_by_key(|s| s.func);
        let mut at = 0;
        for (i, f) in self.funcs.iter_mut().enumerate() {
            let from = at;
            while self.sites.get(at).is_some_and(|s| s.func as usize == i) {
                at += 1;
            }
            f.sites = (from as u32, at as u32);
        }
    }
}
