//! Sending symbol files to symbol servers, in the three protocols build scripts meet:
//! Breakpad's `sym-upload-v1` (one multipart POST), `sym-upload-v2` (Google's: check,
//! create, PUT, complete) and Mozilla's Tecken (zips in the store layout). The requests
//! follow what Breakpad's own `sym_upload` and Mozilla's upload script send (see
//! tests/it/upload.rs), field for field, but with valid JSON. Failures that may pass (5xx,
//! network) are retried with backoff, and 429 and 503 are waited out by every worker; a
//! 4xx is an error quoting the server's answer.

mod exists;
mod multipart;
mod tecken;
mod v1;
mod v2;

pub use exists::Remote;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::fetch::redact;

/// The environment variable holding the API key (v2) or token (Tecken): never a flag,
/// so that it stays out of process lists and shell histories.
pub(crate) const TOKEN_VAR: &str = "DUMPSYMS_UPLOAD_TOKEN";

/// Which protocol the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Breakpad's `sym-upload-v1`: one multipart POST per file.
    SymUploadV1,
    /// Google's `sym-upload-v2`: check, create, PUT, complete, with an API key.
    SymUploadV2,
    /// Mozilla's Tecken: zips in the store layout, with an `Auth-Token`.
    Tecken,
}

impl std::str::FromStr for Protocol {
    type Err = crate::error::ArgumentError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "sym-upload-v1" => Ok(Protocol::SymUploadV1),
            "sym-upload-v2" => Ok(Protocol::SymUploadV2),
            "tecken" => Ok(Protocol::Tecken),
            _ => Err(crate::error::ArgumentError::Protocol(s.to_string())),
        }
    }
}

/// Why a symbol file (or a Tecken zip of them) was not sent. Its words name the file or
/// the server and quote what the server answered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UploadError {
    /// The protocol needs an API key or token and the environment gives none.
    #[error("--upload-protocol {protocol}: set the API key or token in {TOKEN_VAR}")]
    NoToken {
        /// The protocol, as the flag names it.
        protocol: &'static str,
    },
    /// The symbol file's MODULE record cannot be read, or cannot name a place on a
    /// server.
    #[error("{}: {reason}", path.display())]
    BadFile {
        /// The symbol file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The symbol file cannot be read.
    #[error("{}: {source}", path.display())]
    Unreadable {
        /// The symbol file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Tecken's zip cannot be written.
    #[error("cannot write the zip in {}: {source}", dir.display())]
    Zip {
        /// The directory temporary files go to.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// More bytes than the server takes in one upload.
    #[error("{what} is {len} bytes, over the limit of {limit} bytes for one upload")]
    TooLarge {
        /// "the file" or "the zip".
        what: &'static str,
        /// Its size.
        len: u64,
        /// The server's limit ([`Uploader::max_upload`]).
        limit: u64,
    },
    /// The server answered with an error status.
    #[error("{url}: the server answered {status}{}", quoted(answer))]
    Refused {
        /// The request's URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The first line of its answer (at most 300 bytes), if any.
        answer: String,
    },
    /// The server could not be reached, stalled, or pointed elsewhere.
    #[error("{url}: {reason}")]
    Unreachable {
        /// The request's URL (or the server's, once it was given up on).
        url: String,
        /// What went wrong, in words.
        reason: String,
    },
    /// The run's time for uploads ([`Uploader::max_time`]) was spent before this was
    /// sent (a server that rate-limits every request, or a slow one).
    #[error("not sent: the run's {} s for uploads (--upload-max-time) are spent", budget.as_secs())]
    OutOfTime {
        /// The run's time for uploads.
        budget: Duration,
    },
    /// The server's answer is not what the protocol says it sends.
    #[error("{url}: {reason}")]
    BadAnswer {
        /// The request's URL.
        url: String,
        /// What was wrong with the answer, quoting it.
        reason: String,
    },
}

/// `: answer`, or nothing for an empty answer.
fn quoted(answer: &str) -> String {
    match answer.is_empty() {
        true => String::new(),
        false => format!(": {answer}"),
    }
}

/// A symbol file to send, with what its MODULE record says.
#[derive(Debug, Clone)]
pub struct SymbolFile {
    /// The symbol file.
    pub path: PathBuf,
    /// The `MODULE` record's operating system field.
    pub os: String,
    /// The `MODULE` record's CPU field.
    pub cpu: String,
    /// The debug id, without hyphens.
    pub debug_id: String,
    /// The module name: `debug_file` in the forms.
    pub name: String,
    /// `code_file` in the forms: the image's name where `INFO CODE_ID` gives one
    /// (Windows: the PE beside the PDB), else the module name, as Breakpad's clients
    /// send it.
    pub code_file: String,
}

impl SymbolFile {
    /// Reads the MODULE record of the symbol file at `path`, and the image name of its
    /// `INFO CODE_ID` record when one follows.
    pub fn read(path: &Path) -> Result<SymbolFile, UploadError> {
        let bad = |reason: String| UploadError::BadFile {
            path: path.to_path_buf(),
            reason,
        };
        let header = crate::breakpad::header::read_header(path).map_err(|e| bad(e.to_string()))?;
        let m = header.module;
        // Both become path components on the server and in Tecken's zips.
        let in_record = |e: crate::untrusted::UnsafeName| bad(format!("in its MODULE record, {e}"));
        crate::untrusted::path_component(&m.name, "the module name").map_err(in_record)?;
        crate::untrusted::path_component(&m.id, "the debug id").map_err(in_record)?;
        // A copy filed under another name (a library's SONAME) is sent under that name.
        let name = filed_name(path, &m.id).unwrap_or(m.name);
        Ok(SymbolFile {
            path: path.to_path_buf(),
            os: m.os,
            cpu: m.arch,
            debug_id: m.id.replace('-', ""),
            code_file: header.code_file.unwrap_or_else(|| name.clone()),
            name,
        })
    }

    /// `<name>/<debug id>/<name>.sym`, its place in a symbol store.
    pub(crate) fn store_path(&self) -> String {
        crate::breakpad::store::relative_path(&self.name, &self.debug_id)
    }

    fn len(&self) -> Result<u64, UploadError> {
        std::fs::metadata(&self.path)
            .map(|m| m.len())
            .map_err(|source| UploadError::Unreadable {
                path: self.path.clone(),
                source,
            })
    }
}

/// The module name a symbol file at `path` is filed under in a store, when the path
/// is `<name>/<id>/<name>.sym` for its debug id `id`: a `--soname-copies` copy is the
/// same bytes as the file under the module's own name, and goes up under the SONAME.
fn filed_name(path: &Path, id: &str) -> Option<String> {
    let id_dir = path.parent()?;
    if id_dir.file_name()?.to_str()? != id {
        return None;
    }
    let name = id_dir.parent()?.file_name()?.to_str()?;
    let filed = path.file_name()?.to_str()? == crate::breakpad::store::sym_file_name(name);
    let safe = crate::untrusted::path_component(name, "the module name").is_ok();
    (filed && safe).then(|| name.to_string())
}

/// What happened to one symbol file (or, for Tecken, one zip of them).
#[derive(Debug, PartialEq, Eq)]
pub enum Sent {
    /// The server took it.
    Uploaded,
    /// The server already had it (v2 `FOUND`, or `DUPLICATE_DATA`).
    AlreadyThere,
}

/// Where and how to upload.
#[derive(Debug, Clone)]
pub struct Uploader {
    /// Where to send (v2: the API base).
    pub url: String,
    /// How.
    pub protocol: Protocol,
    /// The API key (v2) or token (Tecken), from `DUMPSYMS_UPLOAD_TOKEN`.
    pub token: Option<String>,
    /// A server that sends or takes nothing for this long is given up on for the run:
    /// the files not yet sent are reported as not sent, not each waited on again.
    pub timeout: Duration,
    /// The whole run's time for uploads, `Retry-After` pauses included: files not sent
    /// by then are reported as not sent ([`UploadError::OutOfTime`]).
    pub max_time: Duration,
    /// Further attempts after a failure that may pass.
    pub retries: u32,
    /// Files (or Tecken zips) in flight at once.
    pub jobs: usize,
    /// Tecken: the most bytes of symbol files put in one zip.
    pub zip_limit: u64,
    /// The largest file (Tecken: zip) the server takes in one upload; a larger one is an
    /// error naming this limit.
    pub max_upload: u64,
}

/// How long an upload waits on a server that neither takes nor answers: a minute (a
/// stalled server held each file five minutes, one after the other).
pub(crate) const UPLOAD_TIMEOUT: Duration = Duration::from_secs(60);

/// How long an upload run may take in all, by default: ten minutes, rate limits
/// included (an always-429 server held 20 files for 33 minutes, then failed them all).
pub(crate) const UPLOAD_MAX_TIME: Duration = Duration::from_secs(600);

/// Uploads in flight by default: a few, as symbol servers rate-limit clients that send
/// many at once.
pub(crate) const UPLOAD_JOBS: usize = 4;

/// Tecken refuses an upload larger than this.
pub(crate) const TECKEN_MAX_UPLOAD: u64 = 2_000_000_000;

/// Tecken refuses uploads over 2 GB; its documentation asks for zips under 1.5 GB.
pub(crate) const TECKEN_ZIP_LIMIT: u64 = 1_500_000_000;

impl Uploader {
    /// An uploader for `url`, the token from the environment. Errors when the protocol
    /// needs a token and there is none.
    pub fn new(url: &str, protocol: Protocol) -> Result<Uploader, UploadError> {
        let token = std::env::var(TOKEN_VAR).ok().filter(|t| !t.is_empty());
        // Never printed: not the token, nor the URL's password or key.
        if let Some(t) = &token {
            redact::secret(t);
        }
        redact::url_with_secrets(url);
        if token.is_none() && protocol != Protocol::SymUploadV1 {
            return Err(UploadError::NoToken {
                protocol: match protocol {
                    Protocol::SymUploadV2 => "sym-upload-v2",
                    _ => "tecken",
                },
            });
        }
        Ok(Uploader {
            // As given: Tecken's endpoint is `/upload/`, and a POST redirected to add
            // the slash would lose its body.
            url: url.to_string(),
            protocol,
            token,
            timeout: UPLOAD_TIMEOUT,
            max_time: UPLOAD_MAX_TIME,
            retries: 3,
            jobs: UPLOAD_JOBS,
            zip_limit: TECKEN_ZIP_LIMIT,
            max_upload: match protocol {
                Protocol::Tecken => TECKEN_MAX_UPLOAD,
                // No limit is documented for the Breakpad protocols.
                Protocol::SymUploadV1 | Protocol::SymUploadV2 => u64::MAX,
            },
        })
    }

    /// Sends `files`: per file for the Breakpad protocols, in zips for Tecken. Each
    /// result names what it is about (a file, or a zip's files).
    /// `jobs` at a time, results in the files' order.
    pub fn send(&self, files: &[SymbolFile]) -> Vec<(String, Result<Sent, UploadError>)> {
        let run = Session {
            up: self,
            agent: crate::fetch::http::agent(self.timeout),
            deadline: Instant::now() + self.max_time,
        };
        let run = &run;
        let shown = |f: &SymbolFile| f.path.display().to_string();
        match self.protocol {
            Protocol::SymUploadV1 => {
                self.each(files, |f| (shown(f), run.within(|| v1::send(run, f))))
            }
            Protocol::SymUploadV2 => {
                self.each(files, |f| (shown(f), run.within(|| v2::send(run, f))))
            }
            Protocol::Tecken => {
                let zips = tecken::batches(files, self.zip_limit);
                self.each(&zips, |zip| tecken::send(run, zip))
            }
        }
    }

    /// An error naming the limit when `len` bytes are more than the server takes.
    fn fits(&self, what: &'static str, len: u64) -> Result<(), UploadError> {
        match len > self.max_upload {
            true => Err(UploadError::TooLarge {
                what,
                len,
                limit: self.max_upload,
            }),
            false => Ok(()),
        }
    }

    /// `send` over `items` on `jobs` threads, each taking the next item when its last is
    /// done; results in the items' order.
    fn each<T: Sync, R: Send>(&self, items: &[T], send: impl Fn(&T) -> R + Sync) -> Vec<R> {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done = std::sync::Mutex::new(Vec::with_capacity(items.len()));
        std::thread::scope(|scope| {
            for _ in 0..self.jobs.clamp(1, items.len().max(1)) {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        let result = send(item);
                        done.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push((i, result));
                    }
                });
            }
        });
        let mut done = done.into_inner().unwrap_or_else(|e| e.into_inner());
        done.sort_unstable_by_key(|d| d.0);
        done.into_iter().map(|d| d.1).collect()
    }
}

/// One run of uploads: its uploader, its connections, and when its time is up.
struct Session<'a> {
    up: &'a Uploader,
    agent: ureq::Agent,
    deadline: Instant,
}

impl Session<'_> {
    /// `send`'s result, unless the run's time is already spent: then the file is not
    /// sent, and says why.
    fn within(
        &self,
        send: impl FnOnce() -> Result<Sent, UploadError>,
    ) -> Result<Sent, UploadError> {
        match Instant::now() >= self.deadline {
            true => Err(UploadError::OutOfTime {
                budget: self.up.max_time,
            }),
            false => send().map_err(|e| match e {
                // Given up for the run's time: said as that, not as the server's fault.
                UploadError::Unreachable { .. } if Instant::now() >= self.deadline => {
                    UploadError::OutOfTime {
                        budget: self.up.max_time,
                    }
                }
                e => e,
            }),
        }
    }

    /// What is left of the run's time, for one request's own bound.
    fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

/// One file part of a form: field name, file name, content type, the file.
struct FilePart<'a> {
    field: &'a str,
    filename: &'a str,
    content_type: &'a str,
    source: Source<'a>,
}

/// Where a file part's bytes are.
enum Source<'a> {
    Path(&'a Path),
    /// An open file with no name (Tecken's zip): nothing is left behind if the run is
    /// killed.
    Unnamed(&'a std::fs::File),
}

impl Source<'_> {
    /// The file, read from its start: each attempt sends it whole.
    fn open(&self) -> std::io::Result<std::fs::File> {
        match self {
            Source::Path(p) => std::fs::File::open(p),
            Source::Unnamed(f) => {
                let mut f = f.try_clone()?;
                std::io::Seek::rewind(&mut f)?;
                Ok(f)
            }
        }
    }
}

/// POSTs `form` with `file` as its last part to the upload URL, with `headers`;
/// `expected` is the status the protocol calls success.
fn post_form(
    run: &Session,
    form: &multipart::Form,
    file: &FilePart,
    headers: &[(&str, &str)],
    expected: u16,
) -> Result<Sent, UploadError> {
    use crate::fetch::http::{self, Outcome};
    let up = run.up;
    let outcome = http::with_retries(up.retries, &up.url, Some(run.deadline), || {
        let (len, mut body) = file
            .source
            .open()
            .and_then(|f| form.with_file(file.field, file.filename, file.content_type, f))
            .map_err(|e| Box::new(ureq::Error::from(e)))?;
        let mut request = http::prepared(run.agent.post(&up.url), &up.url, Some(run.left()))
            .header("Content-Type", &form.content_type())
            .header("Content-Length", &len.to_string());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request
            .send(ureq::SendBody::from_reader(&mut body))
            .map_err(Box::new)
    });
    match outcome {
        Outcome::Ok(r) if r.status().as_u16() == expected => Ok(Sent::Uploaded),
        Outcome::Ok(r) => Err(refused(&up.url, r.status().as_u16(), "")),
        Outcome::Status(code, body) => Err(refused(&up.url, code, &body)),
        Outcome::Unreachable(e) => Err(unreachable(&up.url, e)),
    }
}

/// A failed request: the server's status and the start of its answer.
fn refused(url: &str, status: u16, body: &str) -> UploadError {
    let answer = crate::fetch::http::first_line(body).trim();
    UploadError::Refused {
        url: redact::url(url).into_owned(),
        status,
        answer: redact::text(answer).into_owned(),
    }
}

/// A request that got no answer, in the HTTP layer's words.
fn unreachable(url: &str, reason: impl std::fmt::Display) -> UploadError {
    UploadError::Unreachable {
        url: redact::url(url).into_owned(),
        reason: redact::text(&reason.to_string()).into_owned(),
    }
}

/// An answer that is not what the protocol sends.
fn bad_answer(url: &str, reason: String) -> UploadError {
    UploadError::BadAnswer {
        url: redact::url(url).into_owned(),
        reason: redact::text(&reason).into_owned(),
    }
}
