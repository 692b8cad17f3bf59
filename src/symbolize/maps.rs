//! A report's own list of where its modules were loaded, which turns a frame printed as
//! an absolute address (`./prog[0x401234]`, Apple's `0x7fff6b5a82c2 __pthread_kill +
//! 10`, Wine's `0x7b4503f0 in ntdll`) into module + offset.
//!
//! The lists read, and where each was seen:
//! - `START-END PERMS OFFSET DEV INODE PATH`, the kernel's `/proc/PID/maps`, as glibc's
//!   `*** glibc detected ***` and `*** Error in` reports print it after `======= Memory
//!   map: ========`;
//! - `START-END PERMS OFFSET SIZE PATH (BuildId: …)`, an Android tombstone's `memory
//!   map` (its 64-bit addresses split by `'`);
//! - `0xSTART - 0xEND  NAME  VERSION  (main)`, under Breakpad's and rust-minidump's
//!   stackwalkers' `Loaded modules:`;
//! - `0xSTART - 0xEND +IDENT (VERSION) <UUID> PATH`, Apple's `Binary Images:`;
//! - `PE  START-  END  Deferred  NAME`, under Wine's `Modules:`.
//!
//! A module's base is where its symbol file's addresses count from. For an ELF that is
//! its first `PT_LOAD` (the dumper subtracts that segment's address from every address
//! it writes), which the kernel maps at the start of the file's mapping of offset 0; for
//! Mach-O the `__TEXT` segment, the image's address in `Binary Images`; for PE the image
//! base. So in every list the base is the start of the module's first mapping, and an
//! absolute address's offset is the address less it.

use std::collections::HashMap;

use super::scan;

/// How many modules one report may list: a process maps a few hundred, a report that
/// lists more is not one.
const MAX_MODULES: usize = 65_536;

/// One module as the list gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mapped {
    /// Its path, or its name where the list gives no path.
    pub name: String,
    /// What the report's frames may call it beside its path's file name: Apple's
    /// bundle identifier, Wine's module name.
    pub alias: Option<String>,
    /// Where its symbol file's addresses count from, in the crashed process.
    pub base: u64,
    /// The end of its last mapping.
    pub end: u64,
    /// GNU build ID or Mach-O UUID, hex, where the list gives one.
    pub id: Option<String>,
}

/// The modules a report lists, in the order it lists them.
#[derive(Default, Debug)]
pub(crate) struct ModuleMap {
    modules: Vec<Mapped>,
    by_name: HashMap<String, usize>,
    /// The modules a frame's name can mean, by what it may say (see [`names`]): each
    /// module under its file name, its alias and its file name less the extension;
    /// so that placing a frame looks at a few modules, not every one listed (a report of
    /// 200,000 frames and 20,000 listed modules took minutes).
    by_key: HashMap<String, Vec<usize>>,
    /// Each module under its [`stem`], for a frame that names a link to it.
    by_stem: HashMap<String, Vec<usize>>,
    /// Whether a Wine `Modules:` list has begun: its lines name no address with `0x`.
    wine: bool,
    /// The firmware's `ELF file SHA256:` an ESP-IDF panic prints after its backtrace.
    pub firmware_sha256: Option<String>,
}

/// Where an absolute address falls: the module's name to look its symbols up by, its
/// build ID if the list gives one, and the offset from its base.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Placed<'a> {
    pub name: &'a str,
    pub id: Option<&'a str>,
    pub offset: u64,
}

impl ModuleMap {
    /// Whether the report has listed any module.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }

    /// Learns the module `line` lists, if it is an entry of a list this reads.
    pub fn learn(&mut self, line: &str) {
        let text = line.trim();
        if text.starts_with("Modules:") {
            self.wine = true;
            return;
        }
        if let Some(sha) = super::input::esp::elf_sha256(text) {
            self.firmware_sha256 = Some(sha.to_string());
            return;
        }
        let entry = proc_maps(text)
            .or_else(|| image_list(text))
            .or_else(|| microdump(text))
            .or_else(|| self.wine.then(|| wine(text)).flatten());
        if let Some((entry, offset)) = entry {
            self.add(entry, offset);
        }
    }

    /// Adds a mapping of `entry.name` at file offset `offset`: its first mapping of
    /// offset 0 sets the base, any mapping widens its end.
    fn add(&mut self, entry: Mapped, offset: u64) {
        if super::pseudo::is_pseudo_module(&entry.name) {
            return;
        }
        if let Some(&i) = self.by_name.get(&entry.name) {
            let known = &mut self.modules[i];
            if offset == 0 && entry.base < known.base {
                known.base = entry.base;
            }
            known.end = known.end.max(entry.end);
            if known.id.is_none() {
                known.id = entry.id;
            }
            return;
        }
        if self.modules.len() >= MAX_MODULES {
            return;
        }
        let base = entry.base.saturating_sub(offset);
        let i = self.modules.len();
        let own = file_name(&entry.name);
        let keys = [
            Some(own),
            entry.alias.as_deref(),
            own.rsplit_once('.').map(|k| k.0),
        ];
        for key in keys.into_iter().flatten() {
            index(&mut self.by_key, key, i);
        }
        index(&mut self.by_stem, stem(own), i);
        self.by_name.insert(entry.name.clone(), i);
        self.modules.push(Mapped { base, ..entry });
    }

    /// The modules a frame's `module` may name, in the list's order.
    fn named<'s, 'm>(&'s self, module: &'m str) -> impl Iterator<Item = &'s Mapped> + use<'s, 'm> {
        let wanted = file_name(module);
        let mut found: Vec<usize> = [wanted, module]
            .iter()
            .filter_map(|k| self.by_key.get(*k))
            .flatten()
            .copied()
            .collect();
        found.sort_unstable();
        found.dedup();
        found
            .into_iter()
            .map(|i| &self.modules[i])
            .filter(move |m| names(m, module, wanted))
    }

    /// The name and identity (build ID or UUID) the list gives the module a frame
    /// names `module`, if it gives one: the first entry of that name with an identity.
    pub fn identified(&self, module: &str) -> Option<(&str, &str)> {
        self.named(module)
            .find_map(|m| Some((m.name.as_str(), m.id.as_deref()?)))
    }

    /// Where `address` falls in the module a frame names `module` (a path, a file name,
    /// an identifier; None for a frame of no module, placed by address alone).
    pub fn place(&self, module: Option<&str>, address: u64) -> Option<Placed<'_>> {
        // A frame of no named module (a stackwalker's bare address).
        let module = module.filter(|m| !m.is_empty());
        let inside = |m: &&Mapped| m.base <= address && address < m.end.max(m.base + 1);
        let found = match module {
            Some(module) => match self.named(module).find(inside) {
                Some(m) => m,
                // A link's name (`libc.so.6`) where the map gives the file's
                // (`libc-2.12.so`): the mapping holding the address, if its name
                // starts alike.
                None => self
                    .by_stem
                    .get(stem(file_name(module)))?
                    .iter()
                    .map(|&i| &self.modules[i])
                    .find(inside)?,
            },
            None => self.modules.iter().find(inside)?,
        };
        Some(Placed {
            name: &found.name,
            id: found.id.as_deref(),
            offset: address - found.base,
        })
    }
}

/// How many modules one name may stand for: a process maps a few libraries of one
/// name; a list that names one more often is crafted, and its further entries are not
/// looked up by it.
const MAX_PER_NAME: usize = 64;

/// Files module `i` under `key`, up to [`MAX_PER_NAME`] modules a key.
fn index(keys: &mut HashMap<String, Vec<usize>>, key: &str, i: usize) {
    let under = keys.entry(key.to_string()).or_default();
    if under.len() < MAX_PER_NAME && under.last() != Some(&i) {
        under.push(i);
    }
}

/// Whether `m` is the module a frame calls `module` (whose file name is `wanted`).
fn names(m: &Mapped, module: &str, wanted: &str) -> bool {
    let own = file_name(&m.name);
    m.name == module
        || own == wanted
        || m.alias.as_deref() == Some(module)
        // Wine names a PE module without its extension (`ntdll` for `ntdll.dll`).
        || own.rsplit_once('.').is_some_and(|(stem, _)| stem == wanted)
}

/// A library's name before its version or extension: `libc` of `libc.so.6` and of
/// `libc-2.12.so`.
fn stem(name: &str) -> &str {
    name.split(['.', '-']).next().unwrap_or(name)
}

fn file_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// A hexadecimal number, with or without `0x`, Android's `'` between its halves allowed.
fn hex(text: &str) -> Option<u64> {
    let digits = text.strip_prefix("0x").unwrap_or(text);
    if digits.is_empty() || digits.len() > 17 {
        return None;
    }
    let mut value = 0u64;
    for c in digits.chars().filter(|&c| c != '\'') {
        value = value.checked_mul(16)?.checked_add(c.to_digit(16)?.into())?;
    }
    Some(value)
}

/// `START-END PERMS OFFSET …`: a line of `/proc/PID/maps` (glibc) or of an Android
/// tombstone's memory map; the module it maps and the file offset mapped.
fn proc_maps(text: &str) -> Option<(Mapped, u64)> {
    let text = text.strip_prefix("--->").unwrap_or(text);
    let mut words = text.split_whitespace();
    let (start, end) = words.next()?.split_once('-')?;
    let (start, end) = (hex(start)?, hex(end)?);
    let perms = words.next()?;
    let perms_ok = (3..=4).contains(&perms.len())
        && perms
            .bytes()
            .zip(*b"rwxp")
            .all(|(b, want)| b == want || b == b'-' || (want == b'p' && b == b's'));
    if !perms_ok || end <= start {
        return None;
    }
    let offset = hex(words.next()?)?;
    // `fd:01 1234 PATH` in the kernel's maps; `SIZE PATH` in a tombstone's.
    let after = words.next()?;
    let rest_from = |word: &str| {
        let at = word.as_ptr() as usize - text.as_ptr() as usize + word.len();
        text[at..].trim()
    };
    let path = if after.contains(':') {
        let inode = words.next()?;
        inode.parse::<u64>().ok()?;
        rest_from(inode)
    } else {
        hex(after)?;
        rest_from(after)
    };
    let (path, id) = tombstone_notes(path);
    if path.is_empty() {
        return None;
    }
    let entry = Mapped {
        name: path.to_string(),
        alias: None,
        base: start,
        end: end.saturating_add(u64::from(end & 0xfff == 0xfff)),
        id,
    };
    Some((entry, offset))
}

/// A tombstone's path and the build ID in its notes (`/system/lib64/libc.so (BuildId:
/// 1a2b…) (load bias 0x1000)`).
fn tombstone_notes(path: &str) -> (&str, Option<String>) {
    let Some(at) = scan::find(path, " (BuildId: ") else {
        return (
            path.split(" (load bias").next().unwrap_or(path).trim(),
            None,
        );
    };
    let id: String = path[at + " (BuildId: ".len()..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    let id = (id.len() >= 16).then(|| id.to_ascii_lowercase());
    (path[..at].trim(), id)
}

/// `0xSTART - 0xEND  NAME …`: a stackwalker's `Loaded modules:` entry, or Apple's
/// `Binary Images:` entry (`+IDENT (VERSION) <UUID> PATH`).
fn image_list(text: &str) -> Option<(Mapped, u64)> {
    let (start, rest) = scan::split_once(text, " - ")?;
    let start = hex(start.trim().strip_prefix("0x")?)?;
    let rest = rest.trim_start();
    let (end, rest) = rest.split_once(char::is_whitespace)?;
    let end = hex(end.strip_prefix("0x")?)?;
    if end <= start {
        return None;
    }
    let rest = rest.trim();
    let entry = match (rest.find('<'), rest.find('>')) {
        (Some(open), Some(close)) if open < close => {
            let uuid: String = rest[open + 1..close]
                .chars()
                .filter(|&c| c != '-')
                .collect();
            let path = rest[close + 1..].trim();
            let ident = apple_ident(&rest[..open]);
            let id = (uuid.len() == 32 && uuid.bytes().all(|b| b.is_ascii_hexdigit()))
                .then(|| uuid.to_ascii_lowercase());
            Mapped {
                name: if path.is_empty() { ident } else { path }.to_string(),
                alias: Some(ident.to_string()),
                base: start,
                end: end.saturating_add(1),
                id,
            }
        }
        _ => Mapped {
            name: rest.split_whitespace().next()?.to_string(),
            alias: None,
            base: start,
            end: end.saturating_add(1),
            id: None,
        },
    };
    Some((entry, 0))
}

/// `M 7F8B4C6000 00000000 000A6000 1C3B…0 libchrome.so`, a module of a Breakpad
/// microdump (as Chrome on Android logs it): where it is mapped, the file offset of that
/// mapping, its size, its Breakpad debug id (not a build ID, so not kept as one) and
/// its name.
fn microdump(text: &str) -> Option<(Mapped, u64)> {
    // Behind logcat's prefix, as Android logs a microdump.
    let text = scan::split_once(text, "google-breakpad: ").map_or(text, |(_, after)| after);
    let mut words = text.strip_prefix("M ")?.split_whitespace();
    let start = hex(words.next()?)?;
    let offset = hex(words.next()?)?;
    let size = hex(words.next()?)?;
    let id = words.next()?;
    let name = words.next()?;
    if words.next().is_some()
        || size == 0
        || id.len() < 32
        || !id.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return None;
    }
    let entry = Mapped {
        name: name.to_string(),
        alias: None,
        base: start,
        end: start.checked_add(size)?,
        id: None,
    };
    Some((entry, offset))
}

/// The identifier of an Apple `Binary Images` entry: `+com.example.app (1.0)` or
/// `Example Helper (Renderer) arm64` less its `+`, version and architecture.
fn apple_ident(text: &str) -> &str {
    let text = text.trim().trim_start_matches('+');
    let text = match text.rsplit_once(' ') {
        Some((
            head,
            "arm64" | "arm64e" | "arm64_32" | "x86_64" | "x86_64h" | "armv7" | "armv7s" | "armv7k"
            | "armv6" | "i386",
        )) => head,
        _ => text,
    };
    match scan::rfind(text, " (") {
        Some(at) if text.ends_with(')') && at > 0 => text[..at].trim(),
        _ => text,
    }
}

/// `PE  400000-  4a6000  Deferred  game`, `ELF 7b400000-7b812000 Deferred ntdll<elf>`
/// or `  \-PE  7b420000-7b812000  \  kernel32`: an entry of Wine's `Modules:` list.
fn wine(text: &str) -> Option<(Mapped, u64)> {
    let kind_end = scan::whitespace(text)?;
    let kind = text[..kind_end].trim_start_matches("\\-");
    if !matches!(kind, "PE" | "ELF" | "PE-Wine" | "Mach-O") {
        return None;
    }
    let rest = text[kind_end..].trim_start();
    let (start, rest) = rest.split_once('-')?;
    let rest = rest.trim_start();
    let (end, rest) = rest.split_once(char::is_whitespace)?;
    let (start, end) = (hex(start.trim())?, hex(end)?);
    // A builtin DLL is listed twice: `ntdll<elf>`, the ELF that holds it, and under it
    // `\-PE … ntdll`, the PE image its frames' offsets count from. The ELF keeps its
    // `<elf>`, so that the frames' `ntdll` names the PE.
    let name = rest.split_whitespace().last()?;
    if end <= start || name.is_empty() {
        return None;
    }
    let entry = Mapped {
        name: name.to_string(),
        alias: None,
        base: start,
        end,
        id: None,
    };
    Some((entry, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(text: &str) -> ModuleMap {
        let mut m = ModuleMap::default();
        text.lines().for_each(|l| m.learn(l));
        m
    }

    fn at(m: &ModuleMap, module: Option<&str>, address: u64) -> Option<(String, u64)> {
        m.place(module, address)
            .map(|p| (p.name.to_string(), p.offset))
    }

    #[test]
    fn the_kernels_maps_as_glibc_prints_them() {
        let m = map("======= Memory map: ========
00400000-00401000 r-xp 00000000 fd:01 1234                               /home/user/prog
00600000-00601000 rw-p 00000000 fd:01 1234                               /home/user/prog
01c9e000-01cbf000 rw-p 00000000 00:00 0                                  [heap]
7f5a8a827000-7f5a8a9ea000 r-xp 00000000 fd:01 5678                       /lib64/libc-2.17.so
7f5a8a9ea000-7f5a8abea000 ---p 001c3000 fd:01 5678                       /lib64/libc-2.17.so
7ffd1c000000-7ffd1c021000 rw-p 00000000 00:00 0                          [stack]");
        assert_eq!(
            at(&m, Some("./prog"), 0x400683),
            Some(("/home/user/prog".into(), 0x683))
        );
        assert_eq!(
            at(&m, Some("/lib64/libc.so.6"), 0x7f5a8a8a3619),
            Some(("/lib64/libc-2.17.so".into(), 0x7c619)),
            "the link's name, the file's mapping"
        );
        assert_eq!(at(&m, Some("/lib64/libm.so.6"), 0x7f5a8a8a3619), None);
        assert_eq!(
            at(&m, Some("/lib64/libc-2.17.so"), 0x7f5a8a8a3619),
            Some(("/lib64/libc-2.17.so".into(), 0x7c619))
        );
        assert_eq!(at(&m, Some("prog"), 0x7f5a8a8a3619), None, "outside it");
        assert_eq!(at(&m, None, 0x1c9e010), None, "the heap is no module");
    }

    #[test]
    fn a_tombstones_memory_map() {
        let m = map("memory map (3 entries):
    00000070'4a8c0000-00000070'4a8e1fff r--         0     22000  /system/lib64/libc.so (BuildId: 4f3a0c8e1b2d3c4e5f60718293a4b5c6) (load bias 0x0)
--->00000070'4a8e2000-00000070'4a96afff r-x     21000     89000  /system/lib64/libc.so (BuildId: 4f3a0c8e1b2d3c4e5f60718293a4b5c6)
    00000070'4b000000-00000070'4b001fff rw-         0      2000  [anon:libc_malloc]");
        let p = m
            .place(Some("/system/lib64/libc.so"), 0x704a8e3456)
            .unwrap();
        assert_eq!(p.offset, 0x23456);
        assert_eq!(p.id, Some("4f3a0c8e1b2d3c4e5f60718293a4b5c6"));
        assert_eq!(at(&m, None, 0x704b000010), None);
        assert_eq!(
            m.identified("libc.so"),
            Some(("/system/lib64/libc.so", "4f3a0c8e1b2d3c4e5f60718293a4b5c6"))
        );
        assert_eq!(m.identified("libm.so"), None);
    }

    #[test]
    fn apples_binary_images_and_a_stackwalkers_loaded_modules() {
        let m = map("Binary Images:
       0x104f18000 -        0x104f1cfff +com.github.Electron.helper (12.0.0) <2F0E1C5A-6C53-3C0B-9A4E-1D7F2B3A4C5D> /Applications/Example.app/Contents/Frameworks/Example Helper (Renderer).app/Contents/MacOS/Example Helper (Renderer)
    0x7fff6b589000 -     0x7fff6b5b3fff  libsystem_kernel.dylib (6153.101.6) <a1b2c3d4e5f60718293a4b5c6d7e8f90> /usr/lib/system/libsystem_kernel.dylib
       0x1000c4000 -        0x1000cbfff MyApp arm64  <0123456789abcdef0123456789abcdef> /var/containers/Bundle/Application/X/MyApp.app/MyApp");
        let p = m
            .place(Some("com.github.Electron.helper"), 0x104f1c2a8)
            .unwrap();
        assert_eq!(p.offset, 17064);
        assert!(p.name.ends_with("/MacOS/Example Helper (Renderer)"));
        assert_eq!(p.id, Some("2f0e1c5a6c533c0b9a4e1d7f2b3a4c5d"));
        assert_eq!(
            at(&m, Some("libsystem_kernel.dylib"), 0x7fff6b5a82c2),
            Some(("/usr/lib/system/libsystem_kernel.dylib".into(), 0x1f2c2))
        );
        assert_eq!(at(&m, Some("MyApp"), 0x1000c5000).unwrap().1, 0x1000);
        let m = map("W google-breakpad: M 0000007F8B4C6000 00001000 00000000000A6000 1C3B5A4D2E1F00A0B0C0D0E0F0A0B0C00 libchrome.so
M 7F9A000000 0 100000 2D4C6B5E3F2011B1C1D1E1F1A1B1C1D10 libc.so
M 7F9B000000 0 100000 short libx.so");
        assert_eq!(
            at(&m, None, 0x7f8b4d1234),
            Some(("libchrome.so".into(), 0xc234)),
            "the mapping's file offset counts"
        );
        assert_eq!(
            at(&m, Some("libc.so"), 0x7f9a012340),
            Some(("libc.so".into(), 0x12340))
        );
        assert_eq!(
            at(&m, None, 0x7f9b000010),
            None,
            "no debug id: no microdump line"
        );
        let m = map("Loaded modules:
0x55d1c2b39000 - 0x55d1c2b3dfff  crashme  ???  (main)
0x7f2955fc1000 - 0x7f29561a9fff  libc.so.6  ???");
        assert_eq!(
            at(&m, None, 0x55d1c2b3a04e),
            Some(("crashme".into(), 0x104e))
        );
        assert_eq!(
            at(&m, Some("libc.so.6"), 0x7f2955fe8249),
            Some(("libc.so.6".into(), 0x27249))
        );
    }

    #[test]
    fn wines_modules_list() {
        let wine = "Modules:
Module\tAddress\t\t\tDebug info\tName (3 modules)
PE\t  400000-  4a6000\tDeferred        game
ELF\t7b400000-7b812000\tDeferred        kernel32<elf>
  \\-PE\t7b420000-7b812000\t\\               kernel32
ELF\t7bc00000-7bcb1000\tDeferred        ntdll<elf>
  \\-PE\t7bc10000-7bcb1000\t\\               ntdll";
        let m = map(wine);
        assert_eq!(
            at(&m, Some("game"), 0x401234),
            Some(("game".into(), 0x1234))
        );
        // From the PE's base, not its ELF's.
        assert_eq!(
            at(&m, Some("ntdll"), 0x7bc503f0),
            Some(("ntdll".into(), 0x403f0))
        );
        // Before the list's header, no line is read as its entry.
        let m = map(&wine.replace("Modules:", "Threads:"));
        assert!(m.is_empty());
    }

    #[test]
    fn lines_that_only_look_like_lists() {
        let m = map("1-2 of 3 tests
00400000-00401000 rq-p 0 fd:01 1 /x
0x10 - 0x5 backwards
buf[0x10-0x20] ok");
        assert!(m.is_empty(), "{m:?}");
    }
}
