//! How source file paths are written in FILE records: normalized, then rewritten by the
//! user's prefix map (`--prefix-map OLD=NEW`, like the compilers' `-fdebug-prefix-map`),
//! then turned into source links by the user's mappings (`--mapping-*`, `mapping.rs`).

pub mod mapping;

use std::sync::Arc;

/// The rules for FILE paths.
#[derive(Debug, Clone, Default)]
pub struct SourcePaths {
    /// `(OLD, NEW)` pairs, tried in order; the first whose OLD starts the (normalized)
    /// path replaces that prefix with NEW.
    pub prefix_map: Vec<(String, String)>,
    /// Source links (`--mapping-*`), applied to the path the prefix map gives.
    pub mappings: Option<Arc<mapping::Mappings>>,
}

impl SourcePaths {
    /// The path as written: normalized, then remapped, then mapped to its source link.
    /// A link that cannot be made (its source file unreadable for a digest) leaves the
    /// path as it was, said once to `warnings`.
    pub fn apply(&self, path: &str, warnings: &mut crate::error::Warnings) -> String {
        let path = self.remapped(path);
        match &self.mappings {
            Some(m) => m.map(&path, warnings).unwrap_or(path),
            None => path,
        }
    }

    fn remapped(&self, path: &str) -> String {
        let path = normalize(path);
        for (old, new) in &self.prefix_map {
            if let Some(rest) = path.strip_prefix(old.as_str()) {
                return format!("{new}{rest}");
            }
        }
        path
    }
}

/// Removes `.` segments, repeated separators, and `..` segments that follow a named
/// segment, the way compilers and `realpath -s` do: `/a/b/../c/./d//e` becomes
/// `/a/c/d/e`. What cannot be resolved without the file system stays: a relative path's
/// leading `..` segments, and (on an absolute path) `..` at the root, which is the root.
/// Windows paths (a drive letter or backslashes, no forward slash) use `\` throughout.
pub(crate) fn normalize(path: &str) -> String {
    let windows = !path.contains('/') && (path.contains('\\') || drive(path).is_some());
    let sep = if windows { '\\' } else { '/' };
    // The part that stays as it is: `/`, `C:\`, `\\server\share\` and the like.
    let (root, rest) = if windows {
        match drive(path) {
            Some(d) => (d, &path[d.len()..]),
            None if path.starts_with("\\\\") => ("\\\\", &path[2..]),
            None if path.starts_with('\\') => ("\\", &path[1..]),
            None => ("", path),
        }
    } else if let Some(rest) = path.strip_prefix('/') {
        ("/", rest)
    } else {
        ("", path)
    };
    let mut segments: Vec<&str> = Vec::new();
    for segment in rest.split(sep) {
        match segment {
            "" | "." => {}
            ".." => match segments.last() {
                Some(&last) if last != ".." => {
                    segments.pop();
                }
                // `/..` is `/`.
                None if !root.is_empty() => {}
                _ => segments.push(".."),
            },
            s => segments.push(s),
        }
    }
    let body = segments.join(&sep.to_string());
    if root.is_empty() && body.is_empty() {
        return if path.is_empty() {
            String::new()
        } else {
            ".".into()
        };
    }
    format!("{root}{body}")
}

/// `C:\` or `C:` at the start of a Windows path.
fn drive(path: &str) -> Option<&str> {
    let b = path.as_bytes();
    if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        Some(if b.get(2) == Some(&b'\\') {
            &path[..3]
        } else {
            &path[..2]
        })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_without_changing_what_is_named() {
        for (raw, clean) in [
            ("/a/b/../c/./d//e", "/a/c/d/e"),
            (
                "/usr/lib/gcc/x86_64-linux-gnu/12/../../../../include/c++/12/bits/stl_algo.h",
                "/usr/include/c++/12/bits/stl_algo.h",
            ),
            ("./src/a.c", "src/a.c"),
            ("../src/a.c", "../src/a.c"),
            ("a/../../b", "../b"),
            ("/../a", "/a"),
            ("a/..", "."),
            ("/", "/"),
            ("", ""),
            ("a.c", "a.c"),
            ("C:\\src\\.\\x\\..\\a.c", "C:\\src\\a.c"),
            ("\\\\server\\share\\a\\..\\b.c", "\\\\server\\share\\b.c"),
        ] {
            assert_eq!(normalize(raw), clean, "{raw}");
        }
    }

    #[test]
    fn first_matching_prefix_wins() {
        let rules = SourcePaths {
            prefix_map: vec![
                ("/build/app/".into(), "https://example.org/app/".into()),
                ("/build/".into(), "/src/".into()),
            ],
            mappings: None,
        };
        let mut w = crate::error::Warnings::default();
        assert_eq!(
            rules.apply("/build/app/./x/../main.c", &mut w),
            "https://example.org/app/main.c"
        );
        assert_eq!(rules.apply("/build/lib/a.c", &mut w), "/src/lib/a.c");
        assert_eq!(
            rules.apply("/usr/include/stdio.h", &mut w),
            "/usr/include/stdio.h"
        );
    }
}
