//! The tests of `functions.rs`, in a file of their own (source files stay under 1,000
//! lines).
use super::*;

fn segments(map: &BTreeMap<u64, (u64, u32, u32)>) -> Vec<(u64, u64, u32)> {
    map.iter().map(|(&s, &(e, l, _))| (s, e, l)).collect()
}

#[test]
fn overlay_splits_and_replaces() {
    let mut m = BTreeMap::new();
    overlay(&mut m, 0, 10, 1, 0);
    overlay(&mut m, 10, 20, 2, 0);
    overlay(&mut m, 5, 12, 3, 0);
    assert_eq!(segments(&m), vec![(0, 5, 1), (5, 12, 3), (12, 20, 2)]);
    overlay(&mut m, 6, 8, 4, 0);
    assert_eq!(
        segments(&m),
        vec![(0, 5, 1), (5, 6, 3), (6, 8, 4), (8, 12, 3), (12, 20, 2)]
    );
    overlay(&mut m, 0, 20, 9, 0);
    assert_eq!(segments(&m), vec![(0, 20, 9)]);
    overlay(&mut m, 7, 7, 1, 0);
    assert_eq!(segments(&m), vec![(0, 20, 9)]);
}

#[test]
fn a_site_on_two_caller_lines_gives_a_call_per_line() {
    // The caller: line 10 over [0, 8), a gap, line 12 over [12, 20).
    let parent = [(0, 8, 10, 1), (12, 20, 12, 1)];
    // One range across the first row's end and the gap, one in the second row,
    // one past every row.
    let calls = calls_by_caller_line(&[(4, 14), (16, 18), (24, 30)], &parent);
    assert_eq!(
        calls,
        vec![
            (10, 1, vec![(4, 12)]),
            (12, 1, vec![(12, 14), (16, 18), (24, 30)])
        ]
    );
    assert!(calls_by_caller_line(&[(0, 4)], &[]).is_empty());

    // Many caller lines (past the linear lookup), each met twice: a call per line,
    // with both of its ranges.
    let parent: Vec<(u64, u64, u32, u32)> = (0..40)
        .map(|k| (k * 10, k * 10 + 10, (k % 20) as u32, 1))
        .collect();
    let calls = calls_by_caller_line(&[(0, 400)], &parent);
    assert_eq!(calls.len(), 20);
    for (k, call) in calls.iter().enumerate() {
        let k = k as u64;
        assert_eq!(call.0 as u64, k);
        assert_eq!(
            call.2,
            vec![(k * 10, k * 10 + 10), (k * 10 + 200, k * 10 + 210)]
        );
    }
}

#[test]
fn children_follow_the_record_of_their_caller_line() {
    let site = |depth, origin, calls| Site {
        depth,
        origin,
        calls,
        lines: Vec::new(),
    };
    let sites = [
        site(
            0,
            0,
            vec![(5, 0, vec![(0, 10), (20, 30)]), (6, 0, vec![(10, 20)])],
        ),
        // Straddles both of its parent's records.
        site(1, 1, vec![(7, 0, vec![(8, 12)])]),
        site(0, 2, vec![(9, 0, vec![(40, 50)])]),
    ];
    let records: Vec<_> = site_records(sites.into())
        .into_iter()
        .map(|r| (r.depth, r.call_line, r.origin, r.ranges))
        .collect();
    assert_eq!(
        records,
        vec![
            (0, 5, 0, vec![(0, 10), (20, 30)]),
            (1, 7, 1, vec![(8, 10)]),
            (0, 6, 0, vec![(10, 20)]),
            (1, 7, 1, vec![(10, 12)]),
            (0, 9, 2, vec![(40, 50)]),
        ]
    );
}

#[test]
fn intersect_keeps_the_common_parts() {
    assert_eq!(
        intersect(&[(0, 10), (20, 30)], &[(5, 25), (28, 40)]),
        vec![(5, 10), (20, 25), (28, 30)]
    );
    assert!(intersect(&[(0, 5)], &[(5, 9)]).is_empty());
}

#[test]
fn module_runs_have_similar_weight() {
    let weights = [900, 10, 10, 500, 500, 0, 0, 0, 0, 0];
    let ranges = balanced_ranges(&weights, 4);
    assert_eq!(ranges, vec![(0, 1), (1, 4), (4, 5), (5, 10)]);
    // Every module in exactly one run, in order.
    let covered: Vec<usize> = ranges.iter().flat_map(|&(a, b)| a..b).collect();
    assert_eq!(covered, (0..weights.len()).collect::<Vec<_>>());
    assert!(balanced_ranges(&[], 4).is_empty());
    assert_eq!(balanced_ranges(&[0; 3], 0), vec![(0, 3)]);
}
