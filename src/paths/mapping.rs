//! Source links: FILE paths rewritten into where a crash UI finds the source at the
//! revision that was built (`hg:…:{rev}`, `s3:…:{digest}/…`, a URL), with the meaning
//! Mozilla's `dump_syms` gives its `--mapping-var`, `--mapping-src`, `--mapping-dest` and
//! `--mapping-file` (Socorro links frames from the FILE lines that dumper writes), so
//! that a build switching dumpers keeps its links byte for byte.
//!
//! A mapping is a regular expression (the `regex` crate's syntax, searched anywhere in
//! the path) and a template: `{N}` is the regular expression's group N, `{name}` a
//! variable, `{digest}`/`{DIGEST}` the SHA-512 of the source file's bytes in lower or
//! upper case hex. The first mapping whose expression matches (and whose group
//! references all took part) gives the path; none leaves it as it was. A mapping file
//! (JSON: `variables`, and `mappings` of `source`, `destination` and `files`) is read
//! first, its mappings that list `files` (applied only to those exact paths) before
//! those that do not; then the command line's pairs. Variables from the command line
//! replace the file's. Mappings apply to the path as the dumper writes it: normalized,
//! then `--prefix-map`ped.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Mutex;

use sha2::Digest as _;

use crate::error::{WarningKind, Warnings};

/// Longest source file hashed for `{digest}`: the largest generated sources of real
/// programs (amalgamations, embedded tables) are tens of MB; a path an input names may
/// be a sparse file of any size. A larger one is not hashed: its path stays unmapped.
pub(crate) const MAX_DIGESTED: u64 = 128 << 20;

/// Longest path a mapping may give: a real source link (a URL, `hg:…:path:rev`) is a
/// few hundred bytes, and browsers and servers refuse URLs of tens of KB. A template
/// that makes one longer (a `{digest}` repeated a thousand times) leaves the path as it
/// was.
pub(crate) const MAX_MAPPED: usize = 8 << 10;

/// Bytes that mapped paths may add to a run's output in all, over the paths they
/// replace: a million real links are tens of MB.
const MAX_GROWTH: u64 = 64 << 20;

/// Largest mapping file read: Mozilla's are a few KB, one with a rule per file of a
/// large program a few MB.
const MAX_MAPPING_FILE: u64 = 64 << 20;

/// How many rules one regular-expression set searches for at once: each path is
/// searched once per set, not once per rule; a set of thousands of expressions is
/// slower to build than its share of the searches saves.
const RULES_PER_SET: usize = 256;

/// Every mapping of a run, and what they gave (each path, and each file's digest, is
/// worked out once per run).
#[derive(Debug, Default)]
pub struct Mappings {
    rules: Vec<Rule>,
    /// The rules' expressions as sets of [`RULES_PER_SET`], in order: which rules can
    /// apply to a path is found in one search per set.
    sets: Vec<regex::RegexSet>,
    /// Each path's result: mapped, or left as it was.
    done: Mutex<Done>,
}

/// What the mappings gave so far.
#[derive(Debug, Default)]
struct Done {
    paths: HashMap<String, Option<String>>,
    /// What mapped paths added to the output over their originals.
    growth: u64,
    /// The growth bound was said.
    capped: bool,
}

/// Why mappings could not be built from the flags or the file: the run stops (exit 1),
/// as Mozilla's does.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MappingError {
    /// A `--mapping-var` without `=`.
    #[error("--mapping-var {0:?}: must be NAME=VALUE")]
    Variable(String),
    /// Not as many `--mapping-src` as `--mapping-dest`.
    #[error("--mapping-src and --mapping-dest must be given as many times each ({0} and {1})")]
    Unpaired(usize, usize),
    /// A regular expression that does not compile.
    #[error("mapping source {source_text:?}: {why}")]
    Regex {
        /// The expression.
        source_text: String,
        /// The regex crate's words.
        why: String,
    },
    /// A `{…}` in a template that is no group, variable or digest.
    #[error("invalid action {action} in mapping string {template:?}")]
    Action {
        /// What stood between the braces.
        action: String,
        /// The template.
        template: String,
    },
    /// The mapping file cannot be read or is not the JSON it should be.
    #[error("--mapping-file {path}: {why}")]
    File {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
}

/// One mapping: where it applies, and the template cut into literal text and actions.
#[derive(Debug)]
struct Rule {
    re: regex::Regex,
    /// Only these exact paths, when not empty.
    files: HashSet<String>,
    template: Vec<(String, Action)>,
}

/// What follows a piece of literal text in a template.
#[derive(Debug, Clone)]
enum Action {
    Group(usize),
    Value(String),
    Digest { upper: bool },
    None,
}

impl Mappings {
    /// The mappings the flags give: `vars` (`NAME=VALUE`), `sources` and `destinations`
    /// in pairs, and a mapping file. `None` when there are none.
    pub fn new(
        vars: &[String],
        sources: &[String],
        destinations: &[String],
        file: Option<&Path>,
    ) -> Result<Option<Mappings>, MappingError> {
        let mut variables = HashMap::new();
        for v in vars {
            let (name, value) = v
                .split_once('=')
                .ok_or_else(|| MappingError::Variable(v.clone()))?;
            variables.insert(name.to_string(), value.to_string());
        }
        if sources.len() != destinations.len() {
            return Err(MappingError::Unpaired(sources.len(), destinations.len()));
        }
        let mut rules = Vec::new();
        if let Some(path) = file {
            rules.extend(Self::from_file(path, &variables)?);
        }
        for (source, destination) in sources.iter().zip(destinations) {
            rules.push(Rule::new(source, destination, &variables, HashSet::new())?);
        }
        if rules.is_empty() {
            return Ok(None);
        }
        let sets = rules
            .chunks(RULES_PER_SET)
            .map(|chunk| {
                regex::RegexSet::new(chunk.iter().map(|r| r.re.as_str())).map_err(|e| {
                    MappingError::Regex {
                        source_text: format!("{} mappings together", chunk.len()),
                        why: e.to_string(),
                    }
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Some(Mappings {
            rules,
            sets,
            done: Mutex::default(),
        }))
    }

    fn from_file(
        path: &Path,
        command_line: &HashMap<String, String>,
    ) -> Result<Vec<Rule>, MappingError> {
        let bad = |why: String| MappingError::File {
            path: path.display().to_string(),
            why,
        };
        let text = crate::named::read(path, MAX_MAPPING_FILE).map_err(|e| bad(e.to_string()))?;
        let json: serde_json::Value =
            serde_json::from_slice(&text).map_err(|e| bad(e.to_string()))?;
        let strings = |v: &serde_json::Value, what: &str| -> Result<Vec<String>, MappingError> {
            match v {
                serde_json::Value::Null => Ok(Vec::new()),
                serde_json::Value::Array(items) => items
                    .iter()
                    .map(|i| i.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| bad(format!("{what} must be a list of strings"))),
                _ => Err(bad(format!("{what} must be a list of strings"))),
            }
        };
        let mut variables = HashMap::new();
        if let Some(vars) = json.get("variables").and_then(|v| v.as_object()) {
            for (name, value) in vars {
                let value = value
                    .as_str()
                    .ok_or_else(|| bad(format!("variable {name:?} must be a string")))?;
                variables.insert(name.clone(), value.to_string());
            }
        }
        variables.extend(command_line.clone());
        let Some(list) = json.get("mappings").and_then(|m| m.as_array()) else {
            return Err(bad("no \"mappings\" list".into()));
        };
        let mut listed = Vec::new();
        let mut general = Vec::new();
        for m in list {
            let field = |name: &str| {
                m.get(name)
                    .and_then(|v| v.as_str())
                    .ok_or_else(|| bad(format!("a mapping without a {name:?} string")))
            };
            let files: HashSet<String> =
                strings(m.get("files").unwrap_or(&serde_json::Value::Null), "files")?
                    .into_iter()
                    .collect();
            let rule = Rule::new(field("source")?, field("destination")?, &variables, files)?;
            match rule.files.is_empty() {
                true => general.push(rule),
                false => listed.push(rule),
            }
        }
        listed.extend(general);
        Ok(listed)
    }

    /// `path` mapped, or `None` when no mapping takes it; a source file that could not
    /// be read for its digest (the path then stays as it was) is said once to
    /// `warnings`, as a [`WarningKind::SourceLink`] warning.
    pub(crate) fn map(&self, path: &str, warnings: &mut Warnings) -> Option<String> {
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = done.paths.get(path) {
            return known.clone();
        }
        let mut result = None;
        'sets: for (n, set) in self.sets.iter().enumerate() {
            for i in set.matches(path).iter() {
                let rule = &self.rules[n * RULES_PER_SET + i];
                match rule.apply(path) {
                    Ok(Some(mapped)) => {
                        result = Some(mapped);
                        break 'sets;
                    }
                    Ok(None) => {}
                    Err(why) => {
                        warnings.push(
                            WarningKind::SourceLink,
                            format!("{path}: not mapped: {why}"),
                        );
                        break 'sets;
                    }
                }
            }
        }
        if let Some(mapped) = &result {
            let growth = mapped.len().saturating_sub(path.len()) as u64;
            if done.growth.saturating_add(growth) > MAX_GROWTH {
                if !done.capped {
                    warnings.push(
                        WarningKind::SourceLink,
                        format!(
                            "{path}: not mapped, nor any path after it: the mapped paths already add {} bytes to the output (at most {MAX_GROWTH})",
                            done.growth
                        ),
                    );
                    done.capped = true;
                }
                result = None;
            } else {
                done.growth += growth;
            }
        }
        done.paths.insert(path.to_string(), result.clone());
        result
    }
}

impl Rule {
    fn new(
        source: &str,
        destination: &str,
        variables: &HashMap<String, String>,
        files: HashSet<String>,
    ) -> Result<Rule, MappingError> {
        let re = regex::Regex::new(source).map_err(|e| MappingError::Regex {
            source_text: source.to_string(),
            why: e.to_string(),
        })?;
        Ok(Rule {
            re,
            files,
            template: template(destination, variables)?,
        })
    }

    /// The mapped path, `None` when this rule does not apply; an error when the source
    /// file cannot be read for its digest.
    fn apply(&self, path: &str) -> Result<Option<String>, Unmapped> {
        if !self.files.is_empty() && !self.files.contains(path) {
            return Ok(None);
        }
        let Some(caps) = self.re.captures(path) else {
            return Ok(None);
        };
        let mut out = String::new();
        // Worked out once, however often the template names it.
        let mut hashed: Option<String> = None;
        for (text, action) in &self.template {
            out.push_str(text);
            match action {
                Action::Group(n) => match caps.get(*n) {
                    Some(g) => out.push_str(g.as_str()),
                    None => return Ok(None),
                },
                Action::Value(v) => out.push_str(v),
                Action::Digest { upper } => {
                    if hashed.is_none() {
                        hashed = Some(digest(path)?);
                    }
                    let hex = hashed.as_deref().unwrap_or_default();
                    match upper {
                        true => out.push_str(&hex.to_ascii_uppercase()),
                        false => out.push_str(hex),
                    }
                }
                Action::None => {}
            }
            if out.len() > MAX_MAPPED {
                return Err(Unmapped::TooLong);
            }
        }
        Ok(Some(out))
    }
}

/// A template cut into literal text, each piece followed by what replaces the `{…}`
/// after it. As Mozilla reads one: a `{` starts an action (a later `{` restarts it),
/// the next `}` ends it, a `}` with no `{` open is text, and a `{` never closed is text.
fn template(
    destination: &str,
    variables: &HashMap<String, String>,
) -> Result<Vec<(String, Action)>, MappingError> {
    let bytes = destination.as_bytes();
    let mut out = Vec::new();
    let (mut text_start, mut open_at, mut open) = (0, 0, false);
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'{' {
            open_at = i;
            open = true;
        } else if b == b'}' && open {
            let name = &destination[open_at + 1..i];
            let action = match name {
                "DIGEST" => Action::Digest { upper: true },
                "digest" => Action::Digest { upper: false },
                _ => match (variables.get(name), name.parse::<usize>()) {
                    (Some(value), _) => Action::Value(value.clone()),
                    (None, Ok(n)) => Action::Group(n),
                    (None, Err(_)) => {
                        return Err(MappingError::Action {
                            action: name.to_string(),
                            template: destination.to_string(),
                        });
                    }
                },
            };
            out.push((destination[text_start..open_at].to_string(), action));
            open = false;
            text_start = i + 1;
        }
    }
    if text_start < bytes.len() {
        out.push((destination[text_start..].to_string(), Action::None));
    }
    Ok(out)
}

/// Why a rule that matches a path does not map it.
#[derive(Debug, thiserror::Error)]
enum Unmapped {
    /// The source file a `{digest}` is of cannot be read.
    #[error("cannot read it for its digest: {}", refused(.0))]
    Digest(#[source] crate::named::Refused),
    #[error("the mapping makes it longer than {MAX_MAPPED} bytes, longer than any source link")]
    TooLong,
}

/// How [`Unmapped::Digest`] says why: an io error as it is, the others of "it".
fn refused(why: &crate::named::Refused) -> String {
    match why {
        crate::named::Refused::Io(e) => e.to_string(),
        other => format!("it {other}"),
    }
}

/// The SHA-512 of the file at `path`, in lower-case hex: streamed, from a regular file
/// of at most [`MAX_DIGESTED`] bytes opened without blocking (the path is the input's).
fn digest(path: &str) -> Result<String, Unmapped> {
    let mut hasher = sha2::Sha512::new();
    crate::named::stream(Path::new(path), MAX_DIGESTED, |b| hasher.update(b))
        .map_err(Unmapped::Digest)?;
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(m: &Mappings, path: &str) -> Option<String> {
        let mut warnings = Warnings::default();
        let mapped = m.map(path, &mut warnings);
        assert!(warnings.is_empty(), "{warnings:?}");
        mapped
    }

    #[test]
    fn groups_variables_and_the_first_match() {
        let m = Mappings::new(
            &["rev=abc123".into()],
            &["/build/(.*)".into(), "/rustc/([0-9a-f]+)/(.*)".into()],
            &[
                "hg:hg.mozilla.org/mozilla-central:{1}:{rev}".into(),
                "git:github.com/rust-lang/rust:{2}:{1}".into(),
            ],
            None,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            map(&m, "/build/a/b.cpp").as_deref(),
            Some("hg:hg.mozilla.org/mozilla-central:a/b.cpp:abc123")
        );
        assert_eq!(
            map(&m, "/rustc/f3e1/src/lib.rs").as_deref(),
            Some("git:github.com/rust-lang/rust:src/lib.rs:f3e1")
        );
        assert_eq!(map(&m, "/usr/include/stdio.h"), None);
    }

    #[test]
    fn templates_are_cut_as_mozillas_are() {
        let vars = HashMap::from([("v".to_string(), "V".to_string())]);
        let cut = |t: &str| {
            template(t, &vars)
                .unwrap()
                .into_iter()
                .map(|(text, a)| format!("{text}|{a:?}"))
                .collect::<Vec<_>>()
        };
        assert_eq!(cut("a{1}b"), ["a|Group(1)", "b|None"]);
        assert_eq!(cut("a{{v}b"), ["a{|Value(\"V\")", "b|None"]);
        assert_eq!(cut("a}b{c"), ["a}b{c|None"]);
        assert!(template("{nothing}", &vars).is_err());
    }

    #[test]
    fn an_unreadable_source_is_left_unmapped_with_one_warning() {
        let m = Mappings::new(&[], &["(.*)".into()], &["x/{digest}".into()], None)
            .unwrap()
            .unwrap();
        let mut warnings = Warnings::default();
        for _ in 0..3 {
            assert_eq!(m.map("/nonexistent/a.c", &mut warnings), None);
        }
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }
}
