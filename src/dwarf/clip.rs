//! Cutting a function's line rows and inlined calls down to one of its pieces, each call
//! within its parent.

use super::drafts::{Drafts, SiteDraft};
use super::lines::RawRow;
use crate::model::debuginfo::{InlineSite, LineRow, intersect_ranges};

/// The line rows within `[lo, hi)`, clipped to it. Rows whose file cannot be named are
/// dropped.
pub(super) fn clip_lines(
    rows: &[RawRow],
    lo: u64,
    hi: u64,
    mut slot: impl FnMut(u64) -> Option<u32>,
) -> Vec<LineRow> {
    let first = rows.partition_point(|r| r.end <= lo);
    let last = first + rows[first..].partition_point(|r| r.address < hi);
    // Sized once for the rows that may be kept: grown by doubling, these vectors were
    // half the reallocations of a dump.
    let mut out = Vec::with_capacity(last - first);
    for r in &rows[first..last] {
        let (a, e) = (r.address.max(lo), r.end.min(hi));
        if a >= e {
            continue;
        }
        if let Some(file) = slot(r.file) {
            out.push(LineRow {
                address: a,
                size: e - a,
                line: r.line,
                file,
            });
        }
    }
    out
}

/// The inline sites of a function restricted to `[lo, hi)`: each site is clipped to its
/// parent's clipped ranges, and a site left with nothing (with its whole subtree) is
/// dropped, so children always lie within their parents.
pub(super) fn clip_sites(
    sites: &[SiteDraft],
    drafts: &Drafts,
    lo: u64,
    hi: u64,
    mut slot: impl FnMut(Option<u64>) -> Option<u32>,
) -> Vec<InlineSite> {
    // Sized for the sites that may be kept, up to a bound: a piece's vectors are held
    // until its unit is encoded, and a function cut into many pieces would hold its
    // sites' room in each.
    let mut out = Vec::with_capacity(sites.len().min(256));
    // Clipped ranges live in `arena`; `stack` holds each depth's span of it: [0] is the
    // piece itself, [d + 1] the current site at d. No allocation per site but its own.
    // Both sized for what real functions fill (a site's clipped ranges are rarely more
    // than its own; inlined calls nest up to 46 deep): grown from nothing for each
    // piece, they were a reallocation per few sites.
    let room: usize = (sites.iter())
        .map(|s| s.ranges.1.saturating_sub(s.ranges.0) as usize)
        .sum();
    let mut arena: Vec<(u64, u64)> = Vec::with_capacity(1 + room.min(1 << 16));
    arena.push((lo, hi));
    let mut stack: Vec<Option<(usize, usize)>> = Vec::with_capacity(64);
    stack.push(Some((0, 1)));
    let mut scratch = Vec::new();
    for s in sites {
        let d = s.depth as usize;
        if stack.len() < d + 1 {
            // A site deeper than its parent allows: damaged nesting.
            continue;
        }
        stack.truncate(d + 1);
        let clipped = stack[d].and_then(|(a, b)| {
            scratch.clear();
            intersect_ranges(drafts.ranges(s.ranges), &arena[a..b], &mut scratch);
            let at = arena.len();
            arena.extend_from_slice(&scratch);
            (!scratch.is_empty()).then_some((at, arena.len()))
        });
        if let Some((a, b)) = clipped
            && let Some(call_file) = slot(s.call_file)
        {
            out.push(InlineSite {
                depth: s.depth,
                origin: s.origin,
                call_file,
                call_line: s.call_line,
                ranges: arena[a..b].to_vec(),
            });
        }
        stack.push(clipped);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(drafts: &mut Drafts, depth: u32, ranges: Vec<(u64, u64)>) -> SiteDraft {
        let at = drafts.ranges.len() as u32;
        drafts.ranges.extend(ranges);
        SiteDraft {
            func: 0,
            depth,
            origin: 1,
            call_file: Some(1),
            call_line: 7,
            ranges: (at, drafts.ranges.len() as u32),
        }
    }

    #[test]
    fn sites_are_clipped_to_piece_and_parents() {
        let mut d = Drafts::default();
        let sites = vec![
            site(&mut d, 0, vec![(0x10, 0x20), (0x100, 0x110)]), // second range is in another piece
            site(&mut d, 1, vec![(0x18, 0x30)]),                 // sticks out of its parent
            site(&mut d, 0, vec![(0x200, 0x210)]),               // entirely outside the piece
            site(&mut d, 1, vec![(0x200, 0x208)]),               // child of a dropped site
        ];
        let out = clip_sites(&sites, &d, 0x0, 0x40, |_| Some(0));
        let got: Vec<(u32, Vec<(u64, u64)>)> =
            out.into_iter().map(|s| (s.depth, s.ranges)).collect();
        assert_eq!(got, vec![(0, vec![(0x10, 0x20)]), (1, vec![(0x18, 0x20)])]);
    }

    #[test]
    fn lines_are_clipped() {
        let rows = vec![
            RawRow {
                address: 0x0,
                end: 0x10,
                line: 1,
                file: 1,
            },
            RawRow {
                address: 0x10,
                end: 0x20,
                line: 2,
                file: 1,
            },
            RawRow {
                address: 0x20,
                end: 0x30,
                line: 3,
                file: 9,
            },
        ];
        let got = clip_lines(&rows, 0x8, 0x30, |f| (f == 1).then_some(0));
        assert_eq!(
            got,
            vec![
                LineRow {
                    address: 0x8,
                    size: 8,
                    line: 1,
                    file: 0
                },
                LineRow {
                    address: 0x10,
                    size: 0x10,
                    line: 2,
                    file: 0
                },
            ]
        );
    }
}
