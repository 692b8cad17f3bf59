//! The batch's events in words on stderr: which `-q` drops, which only `-v` shows, and
//! a progress bar for a `--store` run on a terminal.

use std::io::{self, IsTerminal};

use dumpsyms::batch::{Counts, Event, Progress, Report};
use dumpsyms::upload::Sent;
use indicatif::{ProgressBar, ProgressStyle};

use crate::cli::{Mode, Run};

/// One line to stderr, with what came from an input made harmless: control characters
/// escaped, length bounded (see [`dumpsyms::for_terminal`]), and no password, key or
/// token in it (the last of the two places the redaction rule is applied).
pub(crate) fn say(line: &str) {
    eprintln!("{}", shown(line));
}

/// `line` as it may be printed.
fn shown(line: &str) -> String {
    dumpsyms::for_terminal(line)
}

/// The lines of a batch on stderr, after the program's name: above the progress bar of
/// a `--store` run on a terminal, none but errors with `-q`.
pub(crate) struct Stderr {
    bar: Option<ProgressBar>,
    quiet: bool,
    verbose: bool,
    /// The directories archives were unpacked to, and the archive each stands for:
    /// a member is shown as `archive!member`, never by the run's temporary path.
    aliases: std::sync::Mutex<Vec<(String, String)>>,
}

/// How much a line matters.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    /// Something failed, or the user must see it (a server that is down, a binary
    /// without debug information): shown even with `-q`.
    Error,
    /// A warning, a summary or a detail: dropped with `-q`.
    Note,
}

impl Stderr {
    pub(crate) fn new(run: &Run) -> Stderr {
        let draw =
            !run.quiet && matches!(run.mode, Mode::Store { .. }) && io::stderr().is_terminal();
        let bar = draw.then(|| {
            // Its length is set when the batch has walked its trees.
            ProgressBar::new(0).with_style(
                ProgressStyle::with_template("{bar:30} {pos}/{len} files {elapsed} {wide_msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            )
        });
        Stderr {
            bar,
            quiet: run.quiet,
            verbose: run.verbose,
            aliases: std::sync::Mutex::new(Vec::new()),
        }
    }

    fn show(&self, level: Level, line: &str) {
        if level == Level::Note && self.quiet {
            return;
        }
        let line = self.unaliased(&format!("dumpsyms: {line}"));
        match &self.bar {
            Some(bar) => bar.println(shown(&line)),
            None => say(&line),
        }
    }

    /// `line` with every unpacked member's path as `archive!member`: where a path
    /// begins, not inside another (a debug directory joined with a member's absolute
    /// directory is a place looked in, and stays as it was).
    fn unaliased(&self, line: &str) -> String {
        let aliases = self.aliases.lock().unwrap_or_else(|e| e.into_inner());
        let mut line = line.to_string();
        for (dir, archive) in aliases.iter() {
            let mut out = String::with_capacity(line.len());
            let mut rest = line.as_str();
            while let Some(at) = rest.find(dir.as_str()) {
                let begins = line.len() == rest.len() && at == 0
                    || rest[..at]
                        .chars()
                        .next_back()
                        .or_else(|| out.chars().next_back())
                        .is_some_and(|c| c.is_whitespace() || "('\"`".contains(c));
                out.push_str(&rest[..at]);
                out.push_str(if begins { archive } else { dir });
                rest = &rest[at + dir.len()..];
            }
            out.push_str(rest);
            line = out;
        }
        line
    }

    /// A detail only `-v` shows.
    fn detail(&self, line: impl FnOnce() -> String) {
        if self.verbose {
            self.show(Level::Note, &line());
        }
    }
}

impl Report for Stderr {
    fn event(&self, event: &Event<'_>) {
        use Level::{Error, Note};
        match event {
            Event::DebugFile { input, debug_file } => self.detail(|| {
                format!(
                    "{}: using debug file {}",
                    input.display(),
                    debug_file.display()
                )
            }),
            Event::Server {
                about: Some(about),
                warning,
            } => self.show(Error, &format!("warning: {}: {warning}", about.display())),
            Event::Server {
                about: None,
                warning,
            } => self.show(Error, &format!("warning: {warning}")),
            Event::NoStackRecords { input, why } => self.show(
                Error,
                &format!(
                    "{}: no STACK records (stack walkers cannot unwind through it): {why}",
                    input.display()
                ),
            ),
            Event::NoDebugInfo { input, search } => {
                let shown = input.display();
                self.show(
                    Error,
                    &format!(
                        "{shown}: no debug info found; looked for {}. Writing what the binary itself has: symbol-table names and unwind tables{}",
                        search,
                        if self.verbose {
                            ""
                        } else {
                            " (-v lists every path tried)"
                        }
                    ),
                );
                if self.verbose {
                    for place in &search.tried {
                        self.show(Error, &format!("{shown}: looked in {place}"));
                    }
                }
            }
            Event::Written { path, .. } => self.detail(|| format!("wrote {}", path.display())),
            Event::SameModule { input, kept } => self.detail(|| {
                format!(
                    "{}: same module as another input, whose {} is kept",
                    input.display(),
                    kept.display()
                )
            }),
            Event::Warnings { input, warnings } => {
                let shown = input.display();
                if self.verbose {
                    for w in *warnings {
                        self.show(Note, &format!("warning: {shown}: {w}"));
                    }
                } else if !warnings.is_empty() {
                    self.show(
                        Note,
                        &format!(
                            "warning: {shown}: {} problem(s) in the file (damaged or unsupported sections); some records may be missing (-v lists them)",
                            warnings.len()
                        ),
                    );
                }
            }
            Event::Skipped { input, why } => {
                self.detail(|| format!("{}: skipped: {why}", input.display()))
            }
            Event::Unpacked {
                archive,
                into,
                warnings,
            } => {
                {
                    let mut aliases = self.aliases.lock().unwrap_or_else(|e| e.into_inner());
                    aliases.push((
                        format!("{}/", into.display()),
                        format!("{}!", archive.display()),
                    ));
                    // Longest first: a nested archive's directory is never a prefix of
                    // another's, but `…/1/` and `…/10/` must not be confused either way.
                    aliases.sort_by_key(|(dir, _)| std::cmp::Reverse(dir.len()));
                }
                self.detail(|| format!("{}: unpacked", archive.display()));
                for w in *warnings {
                    self.show(Note, &format!("warning: {}: {w}", archive.display()));
                }
            }
            Event::NotOnServer(u) => self.show(Note, &format!("not on any server: {u}")),
            Event::Failed(e) => self.show(Error, &format!("error: {e}")),
            Event::Finished { counts, failures } => {
                self.show(Note, &summary(counts));
                for e in *failures {
                    self.show(Error, &format!("failed: {e}"));
                }
            }
            Event::NotSent(e) => self.show(Error, &format!("error: upload: {e}")),
            Event::Sent { what, result } => match result {
                Ok(Sent::Uploaded) => self.detail(|| format!("uploaded {what}")),
                Ok(Sent::AlreadyThere) => self.detail(|| format!("{what}: already on the server")),
                Err(e) => self.show(Error, &format!("error: uploading {what}: {e}")),
            },
            Event::Uploaded {
                url,
                sent,
                already_there,
                failed,
            } => self.show(
                Note,
                &format!(
                    "upload to {url}: {sent} sent, {already_there} already there, {failed} failed"
                ),
            ),
        }
    }

    fn progress(&self, step: Progress<'_>) {
        let Some(bar) = &self.bar else { return };
        match step {
            Progress::Start { files } => bar.set_length(files as u64),
            Progress::File(file) => bar.set_message(dumpsyms::for_terminal(
                &self.unaliased(&file.display().to_string()),
            )),
            Progress::Done => bar.inc(1),
            Progress::Finish => bar.finish_and_clear(),
        }
    }
}

/// The one line a store or missing-list batch ends with.
fn summary(c: &Counts) -> String {
    let absent = match c.not_on_any_server {
        0 => String::new(),
        n => format!(", {n} not on any server"),
    };
    let server = match c.on_server {
        Some(n) => format!(", {n} already on the server"),
        None => String::new(),
    };
    let shard = match c.other_shards {
        Some((n, shard)) => format!(", {n} left to the other shards (this is {shard})"),
        None => String::new(),
    };
    format!(
        "{} dumped{absent}, {} skipped ({} already in the store{server}, {} not modules of their own){shard}, {} failed, in {:.1} s",
        c.dumped,
        c.in_store + c.on_server.unwrap_or(0) + c.companions,
        c.in_store,
        c.companions,
        c.failed,
        c.elapsed.as_secs_f64()
    )
}
