//! The other dumpers' command lines, read as theirs: users switch dumpers by changing
//! one path in a build script, so every flag of Mozilla's `dump_syms` (2.3.9), of
//! Breakpad's Linux, Mac and Windows `dump_syms` means here what it means there. This
//! rewrites such a command line into this command's own flags before clap reads it.
//!
//! Where two peers spell different things alike, the value decides, and a command line
//! that could mean both is refused naming both readings (a silent wrong symbol file is
//! the worst outcome a dumper has):
//! - `-o X`: the operating system to write (Breakpad Linux) when X is one of the OS
//!   names a `.sym` carries (`Linux`, `mac`, `windows`, `iOS`, `android`, …); the
//!   output file (Mozilla; `-` is standard output) otherwise. Ambiguous: an OS name
//!   beside flags only Mozilla's dumper has (`-s`, `-j`, `-t`, `--check-cfi`,
//!   `--no-generator`, `--verbose`, `--mapping-*`), or another value beside flags only
//!   Breakpad's have (`-i`, `-c`, `-r`, `-d`, `-m`, `-n`, `-b`, `-v`, `-w`, `-x`, `-g`).
//! - `-a X`: the architecture (Mozilla, Breakpad Mac) when X is an architecture name and
//!   no file of that name exists; this command's "keep absolute addresses" switch,
//!   followed by the input X, when X is not an architecture name. Ambiguous: an
//!   architecture name that is also an existing file.
//! - `--verbose LEVEL` (Mozilla) takes a level; Breakpad's `-v` is a switch, as here.
//!   `--verbose` with anything but a level is refused naming both.
//!
//! The rest carry over without a collision: Mozilla's `-s DIR` (`--store`), `-j N`
//! (`--jobs`), `-t TYPE` (ignored, as Mozilla ignores it), `--verbose off|error|warn|
//! info|debug|trace` (`-q`, nothing, `-v`); Breakpad Mac's `-g DSYM` (the dSYM, as a
//! further PATH is), `-w` (`-v`), `-x` (`--prefer-symbol-names`); Breakpad Windows'
//! `--i` (`--inlines`) and `--pe`, which is this command's own.

use std::ffi::OsString;
use std::path::Path;

/// The operating-system names a `MODULE` record carries (Breakpad's writers' and
/// Mozilla's), in any case.
const OS_NAMES: &[&str] = &[
    "linux", "mac", "windows", "ios", "android", "fuchsia", "solaris", "nacl", "ps3",
];

/// Architecture names the peers' `-a` takes (Breakpad Mac's `GetArchInfoFromName`,
/// Mozilla's `Arch`), and this command's `--arch`.
const ARCH_NAMES: &[&str] = &[
    "x86_64", "x86_64h", "x86", "i386", "amd64", "arm64", "arm64e", "arm64_32", "aarch64", "arm",
    "armv6", "armv7", "armv7s", "armv7k", "armv7f", "ppc", "ppc64", "ppc7400", "ppc970",
];

/// Flags only Mozilla's dumper has.
const MOZILLA_ONLY: &[&str] = &[
    "-s",
    "-j",
    "-t",
    "--type",
    "--check-cfi",
    "--no-generator",
    "--verbose",
    "--mapping-var",
    "--mapping-src",
    "--mapping-dest",
    "--mapping-file",
];

/// Single-letter switches only Breakpad's dumpers have (`-n`, `-b` and `-g` take
/// values).
const BREAKPAD_ONLY: &[char] = &['i', 'c', 'r', 'd', 'm', 'n', 'b', 'v', 'w', 'x', 'g'];

/// The command line in this command's own flags, and notes on what was read as whose
/// (told on standard error with `-v`); or why it cannot be read.
pub(crate) struct Translated {
    pub args: Vec<OsString>,
    pub notes: Vec<String>,
}

/// Subcommands: their flags are this command's own.
const SUBCOMMANDS: &[&str] = &["symbolize", "man", "completions"];

/// Rewrites `args` (without the program's name); relative paths are looked for in `cwd`.
pub(crate) fn translate(args: Vec<OsString>, cwd: &Path) -> Result<Translated, String> {
    if args
        .first()
        .and_then(|a| a.to_str())
        .is_some_and(|a| SUBCOMMANDS.contains(&a))
    {
        return Ok(Translated {
            args,
            notes: Vec::new(),
        });
    }
    let evidence = Evidence::of(&args);
    let mut out = Vec::with_capacity(args.len());
    let mut notes = Vec::new();
    let mut it = args.into_iter().peekable();
    while let Some(arg) = it.next() {
        let Some(text) = arg.to_str().map(str::to_string) else {
            out.push(arg);
            continue;
        };
        if text == "--" {
            out.push(arg);
            out.extend(it.by_ref());
            break;
        }
        // A flag and its value, as `-oX`, `-o X`, `--output=X` or `--output X`.
        let mut value = |flag: &str| -> Option<String> {
            let attached = text.strip_prefix(flag).filter(|v| !v.is_empty());
            match attached {
                Some(v) => Some(v.strip_prefix('=').unwrap_or(v).to_string()),
                None => it
                    .next_if(|_| text == flag)
                    .map(|v| v.to_string_lossy().into_owned()),
            }
        };
        match short_or_long(&text) {
            Some("-o") => {
                let Some(v) = value("-o") else {
                    out.push(arg);
                    continue;
                };
                out.extend(output_or_os(&v, &evidence, &mut notes)?);
            }
            Some("--output") => match value("--output") {
                // Mozilla's `-` is standard output, the default here.
                Some(v) if v == "-" => notes.push("--output -: standard output".into()),
                Some(v) => out.extend(["--output".into(), v.into()]),
                None => out.push(arg),
            },
            Some("-a") | Some("--arch") => {
                let long = text.starts_with("--");
                let flag = if long { "--arch" } else { "-a" };
                match value(flag) {
                    Some(v) => out.extend(arch_or_switch(&v, long, cwd, &mut notes)?),
                    None => out.push(arg),
                }
            }
            Some("-s") => match value("-s") {
                Some(v) => out.extend(["--store".into(), v.into()]),
                None => out.push(arg),
            },
            Some("-j") => match value("-j") {
                // Mozilla takes anything; what is not a count of at least one is "one
                // per CPU", the default here.
                Some(v) if v.parse::<u16>().is_ok_and(|n| n > 0) => {
                    out.extend(["--jobs".into(), v.into()])
                }
                Some(v) => notes.push(format!("-j {v}: one thread per CPU")),
                None => out.push(arg),
            },
            Some("-t") | Some("--type") => {
                let flag = if text.starts_with("--") {
                    "--type"
                } else {
                    "-t"
                };
                if let Some(v) = value(flag) {
                    notes.push(format!(
                        "{flag} {v}: ignored, as Mozilla's dump_syms ignores it"
                    ));
                }
            }
            Some("-g") => match value("-g") {
                Some(v) => out.extend(["--debug-dir".into(), v.into()]),
                None => out.push(arg),
            },
            Some("--verbose") => {
                let v = value("--verbose").unwrap_or_default();
                out.extend(verbosity(&v)?);
            }
            Some("--i") => out.push("--inlines".into()),
            _ if is_switch_cluster(&text) => out.extend(switches(&text)),
            _ => out.push(arg),
        }
    }
    Ok(Translated { args: out, notes })
}

/// The flag a token starts with, for the flags read here.
fn short_or_long(text: &str) -> Option<&'static str> {
    const LONG: &[&str] = &["--output", "--arch", "--type", "--verbose", "--i"];
    if let Some(flag) = LONG
        .iter()
        .find(|f| text == **f || text.strip_prefix(**f).is_some_and(|r| r.starts_with('=')))
    {
        return Some(flag);
    }
    const SHORT: &[&str] = &["-o", "-a", "-s", "-j", "-t", "-g"];
    SHORT
        .iter()
        .copied()
        .find(|f| text.starts_with(f) && !text.starts_with("--"))
}

/// `-w` and `-x`, alone or among other switches (`-cx`): Breakpad Mac's.
fn is_switch_cluster(text: &str) -> bool {
    let Some(letters) = text.strip_prefix('-').filter(|l| !l.starts_with('-')) else {
        return false;
    };
    !letters.is_empty()
        && letters.contains(['w', 'x'])
        && letters.chars().all(|c| "icrdmvqwx".contains(c))
}

fn switches(text: &str) -> Vec<OsString> {
    let mut out = Vec::new();
    for c in text[1..].chars() {
        out.push(match c {
            'w' => "-v".into(),
            'x' => "--prefer-symbol-names".into(),
            c => format!("-{c}").into(),
        });
    }
    out
}

/// What flags a command line holds, for the collisions' evidence.
struct Evidence {
    mozilla: Option<String>,
    breakpad: Option<String>,
}

impl Evidence {
    fn of(args: &[OsString]) -> Evidence {
        let mut e = Evidence {
            mozilla: None,
            breakpad: None,
        };
        for a in args.iter().filter_map(|a| a.to_str()) {
            if a == "--" {
                break;
            }
            let mozilla = MOZILLA_ONLY.iter().find(|f| {
                a == **f
                    || (f.starts_with("--") && a.starts_with(&format!("{f}=")))
                    || (!f.starts_with("--") && a.starts_with(**f) && !a.starts_with("--"))
            });
            if let Some(f) = mozilla {
                e.mozilla.get_or_insert_with(|| f.to_string());
            }
            if let Some(letters) = a.strip_prefix('-').filter(|l| !l.starts_with('-'))
                && let Some(c) = letters.chars().next()
                && BREAKPAD_ONLY.contains(&c)
            {
                e.breakpad.get_or_insert_with(|| format!("-{c}"));
            }
            if a == "--pe" || a == "--i" {
                e.breakpad.get_or_insert_with(|| a.to_string());
            }
        }
        e
    }
}

/// `-o X` read as the OS or the output file (see the module's doc).
fn output_or_os(v: &str, e: &Evidence, notes: &mut Vec<String>) -> Result<Vec<OsString>, String> {
    if v == "-" {
        notes.push("-o -: standard output (Mozilla's dump_syms)".into());
        return Ok(Vec::new());
    }
    let os = OS_NAMES.contains(&v.to_ascii_lowercase().as_str());
    match (os, &e.mozilla, &e.breakpad) {
        (true, Some(m), _) => Err(format!(
            "-o {v} is ambiguous: Breakpad's dump_syms reads it as the operating system to \
             write, Mozilla's as the file to write, and this command line also has Mozilla's \
             {m}; write --os {v} for the first, --output {v} for the second"
        )),
        (true, None, _) => {
            notes.push(format!(
                "-o {v}: the operating system to write (Breakpad's dump_syms)"
            ));
            Ok(vec!["--os".into(), v.into()])
        }
        (false, None, Some(b)) => Err(format!(
            "-o {v} is ambiguous: Mozilla's dump_syms reads it as the file to write, \
             Breakpad's as the operating system to write, and this command line also has \
             Breakpad's {b}; write --output {v} for the first, --os {v} for the second"
        )),
        (false, _, _) => {
            notes.push(format!("-o {v}: the file to write (Mozilla's dump_syms)"));
            Ok(vec!["--output".into(), v.into()])
        }
    }
}

/// `-a X` read as the architecture, or as the keep-absolute-addresses switch before the
/// input X (see the module's doc). `--arch X` is always the architecture.
fn arch_or_switch(
    v: &str,
    long: bool,
    cwd: &Path,
    notes: &mut Vec<String>,
) -> Result<Vec<OsString>, String> {
    let arch = ARCH_NAMES.contains(&v.to_ascii_lowercase().as_str());
    if long {
        return Ok(vec!["--arch".into(), v.into()]);
    }
    let exists = cwd.join(v).exists();
    match (arch, exists) {
        (true, true) => Err(format!(
            "-a {v} is ambiguous: Mozilla's and Breakpad's Mac dump_syms read it as the \
             architecture to dump, this command's -a (keep absolute addresses) is a switch \
             and {v} the file to dump, which exists; write --arch {v} for the first, \
             -a ./{v} for the second"
        )),
        (true, false) => {
            notes.push(format!("-a {v}: the architecture to dump"));
            Ok(vec!["--arch".into(), v.into()])
        }
        (false, _) => Ok(vec!["-a".into(), v.into()]),
    }
}

/// Mozilla's `--verbose LEVEL`.
fn verbosity(level: &str) -> Result<Vec<OsString>, String> {
    match level {
        "off" => Ok(vec!["-q".into()]),
        "error" => Ok(Vec::new()),
        "warn" | "info" | "debug" | "trace" => Ok(vec!["-v".into()]),
        _ => Err(format!(
            "--verbose {level:?}: Mozilla's dump_syms takes a level (off, error, warn, info, \
             debug, trace) after --verbose; Breakpad's -v is a switch, as this command's is"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Result<Vec<String>, String> {
        args_in(line, Path::new("/nonexistent"))
    }

    fn args_in(line: &str, cwd: &Path) -> Result<Vec<String>, String> {
        let t = translate(line.split_whitespace().map(OsString::from).collect(), cwd)?;
        Ok(t.args
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect())
    }

    #[test]
    fn minus_o_is_decided_by_its_value() {
        assert_eq!(
            args("-o app.sym app").unwrap(),
            ["--output", "app.sym", "app"]
        );
        assert_eq!(
            args("-oapp.sym app").unwrap(),
            ["--output", "app.sym", "app"]
        );
        assert_eq!(args("-o - app").unwrap(), ["app"]);
        assert_eq!(args("-o Linux app").unwrap(), ["--os", "Linux", "app"]);
        assert_eq!(args("-o mac -c app").unwrap(), ["--os", "mac", "-c", "app"]);
        let both = args("-o Linux -s store app").unwrap_err();
        assert!(both.contains("ambiguous") && both.contains("-s"), "{both}");
        let both = args("-c -o out.sym app").unwrap_err();
        assert!(both.contains("ambiguous") && both.contains("-c"), "{both}");
        assert_eq!(
            args("-o x.sym -s store app").unwrap(),
            ["--output", "x.sym", "--store", "store", "app"]
        );
    }

    #[test]
    fn minus_a_is_decided_by_its_value() {
        assert_eq!(
            args("-a arm64 universal-bin").unwrap(),
            ["--arch", "arm64", "universal-bin"]
        );
        assert_eq!(args("-a x86_64 App").unwrap(), ["--arch", "x86_64", "App"]);
        assert_eq!(args("-a app").unwrap(), ["-a", "app"]);
        assert_eq!(args("--arch=arm64 a").unwrap(), ["--arch", "arm64", "a"]);
        let dir = std::env::temp_dir().join(format!("peers-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("arm64")).unwrap();
        let line = format!("-a {}", dir.join("arm64").display());
        // A path is no architecture name: the switch, and the input.
        assert_eq!(args(&line).unwrap()[0], "-a");
        let both = args_in("-a arm64", &dir);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(both.unwrap_err().contains("ambiguous"));
    }

    #[test]
    fn the_other_peers_flags_carry_over() {
        assert_eq!(
            args("-s symbols -j 2 -t elf --check-cfi app").unwrap(),
            ["--store", "symbols", "--jobs", "2", "--check-cfi", "app"]
        );
        assert_eq!(args("--verbose error a").unwrap(), ["a"]);
        assert_eq!(args("--verbose off a").unwrap(), ["-q", "a"]);
        assert_eq!(args("--verbose=debug a").unwrap(), ["-v", "a"]);
        assert!(args("--verbose a").unwrap_err().contains("takes a level"));
        assert_eq!(
            args("-g App.dSYM App").unwrap(),
            ["--debug-dir", "App.dSYM", "App"]
        );
        assert_eq!(
            args("-w -x App").unwrap(),
            ["-v", "--prefer-symbol-names", "App"]
        );
        assert_eq!(
            args("-cx App").unwrap(),
            ["-c", "--prefer-symbol-names", "App"]
        );
        assert_eq!(args("--i app.pdb").unwrap(), ["--inlines", "app.pdb"]);
        assert_eq!(args("--pe app.exe").unwrap(), ["--pe", "app.exe"]);
        assert_eq!(args("symbolize -o x").unwrap(), ["symbolize", "-o", "x"]);
        assert_eq!(args("-- -o x").unwrap(), ["--", "-o", "x"]);
    }
}
