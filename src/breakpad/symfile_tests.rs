//! The tests of `symfile.rs`, in a file of their own (source files stay under 1,000
//! lines).
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

#[test]
fn a_function_is_found_by_the_name_a_debugger_gives_it() {
    let text = "MODULE windows x86_64 0123456789ABCDEF0123456789ABCDEF1 app.pdb
FUNC 1000 40 0 CMyClass::Method(int)
FUNC 1100 20 0 std::vector<int, std::allocator<int> >::push_back(int const&)
FUNC 1200 10 0 `anonymous namespace'::helper()
FUNC 1300 10 0 (anonymous namespace)::other(char*) const
FUNC 1400 10 0 overloaded(int)
FUNC 1500 10 0 overloaded(char)
FUNC 1600 10 0 Functor::operator()(int)
PUBLIC 2000 0 RaiseException
";
    let sym = SymFile::parse(text.as_bytes());
    assert_eq!(sym.address_of("CMyClass::Method"), Some(0x1000));
    assert_eq!(
        sym.address_of("std::vector<int,std::allocator<int> >::push_back"),
        Some(0x1100)
    );
    assert_eq!(
        sym.address_of("`anonymous namespace'::helper"),
        Some(0x1200)
    );
    assert_eq!(sym.address_of("`anonymous namespace'::other"), Some(0x1300));
    assert_eq!(sym.address_of("Functor::operator()"), Some(0x1600));
    assert_eq!(sym.address_of("RaiseException"), Some(0x2000));
    // Two addresses answer: no guess.
    assert_eq!(sym.address_of("overloaded"), None);
    assert_eq!(sym.address_of("CMyClass::Other"), None);
    assert_eq!(sym.address_of("CMyClass"), None);
    assert_eq!(sym.address_of(""), None);
}
