//! Scoring a symbol file against llvm-symbolizer's recorded answers.

use super::*;

/// Agreement required on each measure for each fixture.
pub const REQUIRED: f64 = 0.99;

#[derive(Default)]
pub struct Score {
    pub total: usize,
    pub function: usize,
    pub line: usize,
    pub inline: usize,
    pub tolerated: usize,
    pub misses: Vec<String>,
}

/// How our name compares with the oracle's.
#[derive(PartialEq)]
pub enum NameMatch {
    Same,
    /// Tolerated: where DWARF has no `DW_AT_linkage_name` (GCC leaves it out for
    /// functions in anonymous namespaces and for abstract instances of templates),
    /// llvm-symbolizer prints the bare `DW_AT_name` (`sort<int*, ...>`), while we print
    /// the qualified name (`std::sort<int*, ...>`), as Breakpad does, or the demangled
    /// symbol with its parameter list. The oracle's name must still be our name's last
    /// component.
    Qualified,
    /// Tolerated only where GNU's demangler is not used (off glibc Linux): a linkage
    /// name cpp_demangle cannot demangle (GCC's `std::swap` with an `enable_if`
    /// expression); we write the qualified source name, and the oracle's full name
    /// (demangled by GNU c++filt) must be that name with a return type and parameter
    /// list around it.
    Undemangled,
    Different,
}

/// LLVM 14 demangles legacy Rust symbols as C++, keeping the hash element
/// (`grid::collatz::h4cdc253c0333cf1d`); we leave the hash out, as rustc-demangle's
/// alternate form, Breakpad and Mozilla do.
pub fn strip_rust_hash(name: &str) -> &str {
    match name.rsplit_once("::h") {
        Some((head, hash)) if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) => {
            head
        }
        _ => name,
    }
}

/// LLVM 14 does not know legacy Rust's escapes either: it prints
/// `_$LT$T$u20$as$u20$core..convert..Into$LT$U$GT$$GT$::into` for
/// `<T as core::convert::Into<U>>::into`. Decoded here as rustc-demangle decodes them.
pub fn decode_rust_escapes(name: &str) -> String {
    if !name.contains('$') && !name.contains("..") {
        return name.to_string();
    }
    let name = name.replace("::_$", "::$");
    let name = name
        .strip_prefix("_$")
        .map_or(name.clone(), |r| format!("${r}"));
    let mut out = name;
    for (from, to) in [
        ("$LT$", "<"),
        ("$GT$", ">"),
        ("$u20$", " "),
        ("$C$", ","),
        ("$RF$", "&"),
        ("$BP$", "*"),
        ("$SP$", "@"),
        ("$LP$", "("),
        ("$RP$", ")"),
        ("$u7b$", "{"),
        ("$u7d$", "}"),
        ("$u27$", "'"),
        ("$u5b$", "["),
        ("$u5d$", "]"),
        ("$u7e$", "~"),
        ("..", "::"),
    ] {
        out = out.replace(from, to);
    }
    out
}

/// Whether dumpsyms demangles C++ with GNU's demangler (as c++filt does) on this platform.
pub const GNU_DEMANGLER: bool = cfg!(all(target_os = "linux", target_env = "gnu"));

pub fn compare_names(ours: &str, oracle: &str) -> NameMatch {
    let oracle = decode_rust_escapes(strip_rust_hash(oracle));
    // The demanglers space nested template closers differently (`> >` and `>>`).
    let (ours, oracle) = (ours.replace("> >", ">>"), oracle.replace("> >", ">>"));
    if ours == oracle {
        return NameMatch::Same;
    }
    let qualified = ours.ends_with(&format!("::{oracle}"))
        || ours.starts_with(&format!("{oracle}("))
        || ours.contains(&format!("::{oracle}("))
        || ours.contains(&format!(" {oracle}("));
    if qualified {
        NameMatch::Qualified
    } else if !GNU_DEMANGLER
        && (oracle.starts_with(&format!("{ours}(")) || oracle.contains(&format!(" {ours}(")))
    {
        NameMatch::Undemangled
    } else {
        NameMatch::Different
    }
}

/// GCC's clone suffixes as the symbol table has them (`main.cold`,
/// `report_error.constprop.0`) and as c++filt demangles them (`f(int) [clone .cold]`):
/// they name a part of the source function, which is what we name.
pub fn strip_clone_suffix(name: &str) -> &str {
    let mut name = name;
    loop {
        let before = name;
        if let Some(i) = name.rfind(" [clone .")
            && name.ends_with(']')
        {
            name = &name[..i];
        }
        for suffix in [".cold", ".constprop.", ".isra.", ".part.", ".lto_priv."] {
            if let Some(i) = name.rfind(suffix) {
                let rest = &name[i + suffix.len()..];
                if rest.chars().all(|c| c.is_ascii_digit()) {
                    name = &name[..i];
                }
            }
        }
        if name == before {
            return name;
        }
    }
}

pub fn score(sym: &SymFile, oracle: &[OracleRow]) -> Score {
    score_with(|addr| sym.lookup(addr), oracle)
}

/// [`score`], with the answers of another reader of the symbol file.
pub fn score_with(lookup: impl Fn(u64) -> Option<Answer>, oracle: &[OracleRow]) -> Score {
    let mut s = Score::default();
    for row in oracle {
        let (addr, frames) = (&row.address, &row.frames);
        s.total += 1;
        let Some(ans) = lookup(*addr) else {
            s.misses
                .push(format!("{addr:#x}: no FUNC; oracle says {frames:?}"));
            continue;
        };
        let outer = frames.last().unwrap();
        let mut m = compare_names(&ans.function, &outer.0);
        if m == NameMatch::Different
            && ans.function.replace("> >", ">>")
                == strip_clone_suffix(&row.symtab_name).replace("> >", ">>")
        {
            // Where DWARF has no linkage name we take the symbol's name, as
            // llvm-symbolizer does by default.
            m = NameMatch::Same;
        }
        if m != NameMatch::Different {
            s.function += 1;
            s.tolerated += usize::from(m != NameMatch::Same);
        } else {
            s.misses.push(format!(
                "{addr:#x}: function {:?}, oracle {:?}",
                ans.function, outer.0
            ));
        }
        let inner = &frames[0];
        let line_ok = if inner.2 == 0 {
            // The compiler attributes this code to no line; we write no line record.
            ans.location.is_none()
        } else {
            ans.location.as_ref() == Some(&(inner.1.clone(), inner.2))
        };
        if line_ok {
            s.line += 1;
        } else {
            s.misses.push(format!(
                "{addr:#x}: location {:?}, oracle {:?}",
                ans.location,
                (&inner.1, inner.2)
            ));
        }
        // Oracle frames innermost first: frame k is inlined into frame k+1, at frame
        // k+1's location.
        let n = frames.len();
        let expected: Vec<(String, String, u32)> = (0..n - 1)
            .rev()
            .map(|k| {
                (
                    frames[k].0.clone(),
                    frames[k + 1].1.clone(),
                    frames[k + 1].2,
                )
            })
            .collect();
        let mut tolerated = false;
        let inline_ok = expected.len() == ans.inlines.len()
            && expected.iter().zip(&ans.inlines).all(|(e, a)| {
                let m = compare_names(&a.0, &e.0);
                tolerated |= m != NameMatch::Same;
                m != NameMatch::Different && e.1 == a.1 && e.2 == a.2
            });
        if inline_ok {
            s.inline += 1;
            s.tolerated += usize::from(tolerated);
        } else {
            s.misses.push(format!(
                "{addr:#x}: inlines {:?}, oracle {:?}",
                ans.inlines, expected
            ));
        }
    }
    s
}

impl Score {
    /// Prints one line of figures (and a few of the disagreements) for `label`; true
    /// when every measure reaches [`REQUIRED`].
    pub fn report(&self, label: &str) -> bool {
        let pct = |n: usize| n as f64 / self.total as f64;
        println!(
            "{label:<34} {:>6} {:>8.2}% {:>8.2}% {:>8.2}% {:>10}",
            self.total,
            100.0 * pct(self.function),
            100.0 * pct(self.line),
            100.0 * pct(self.inline),
            self.tolerated
        );
        let shown: usize = std::env::var("SHOW_MISSES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(8);
        for m in self.misses.iter().take(shown) {
            println!("    {m}");
        }
        pct(self.function) >= REQUIRED && pct(self.line) >= REQUIRED && pct(self.inline) >= REQUIRED
    }
}
