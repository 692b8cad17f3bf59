//! Sending symbol files to symbol servers, in the three protocols build scripts meet:
//! Breakpad's `sym-upload-v1` (one multipart POST), `sym-upload-v2` (Google's: check,
//! create, PUT, complete) and Mozilla's Tecken (zips in the store layout). The requests
//! follow what Breakpad's own `sym_upload` and Mozilla's upload script send (see
//! docs/symbol-upload-protocols.md in the shared docs), field for field, but with valid
//! JSON. Failures that may pass (5xx, network) are retried with backoff; a 4xx is an
//! error quoting the server's answer.

mod multipart;
mod tecken;
mod v1;
mod v2;

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The environment variable holding the API key (v2) or token (Tecken): never a flag,
/// so that it stays out of process lists and shell histories.
pub const TOKEN_VAR: &str = "DUMPSYMS_UPLOAD_TOKEN";

/// Which protocol the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    SymUploadV1,
    SymUploadV2,
    Tecken,
}

impl std::str::FromStr for Protocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "sym-upload-v1" => Ok(Protocol::SymUploadV1),
            "sym-upload-v2" => Ok(Protocol::SymUploadV2),
            "tecken" => Ok(Protocol::Tecken),
            _ => Err(format!(
                "{s:?}: the protocols are sym-upload-v1, sym-upload-v2 and tecken"
            )),
        }
    }
}

/// A symbol file to send, with what its MODULE record says.
#[derive(Debug, Clone)]
pub struct SymbolFile {
    pub path: PathBuf,
    pub os: String,
    pub cpu: String,
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
    pub fn read(path: &Path) -> Result<SymbolFile, String> {
        let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut reader = std::io::BufReader::new(std::io::Read::take(file, 64 << 10));
        let line = |reader: &mut std::io::BufReader<_>| -> Result<String, String> {
            let mut l = String::new();
            std::io::BufRead::read_line(reader, &mut l)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(l.trim_end().to_string())
        };
        let first = line(&mut reader)?;
        let f: Vec<&str> = first.splitn(5, ' ').collect();
        let ["MODULE", os, cpu, id, name] = f[..] else {
            return Err(format!(
                "{}: not a symbol file (no MODULE record first)",
                path.display()
            ));
        };
        // Both become path components on the server and in Tecken's zips.
        let in_record = |e: String| format!("{}: in its MODULE record, {e}", path.display());
        crate::untrusted::path_component(name, "the module name").map_err(in_record)?;
        crate::untrusted::path_component(id, "the debug id").map_err(in_record)?;
        // `INFO CODE_ID <id> <image name>` comes right after MODULE when it is there.
        let second = line(&mut reader)?;
        let code_file = second
            .strip_prefix("INFO CODE_ID ")
            .and_then(|rest| rest.split_once(' '))
            .map(|(_, image)| image.to_string())
            .filter(|image| !image.is_empty())
            .unwrap_or_else(|| name.to_string());
        Ok(SymbolFile {
            path: path.to_path_buf(),
            os: os.into(),
            cpu: cpu.into(),
            debug_id: id.replace('-', ""),
            name: name.into(),
            code_file,
        })
    }

    /// `<name>/<debug id>/<name>.sym`, its place in a symbol store.
    pub fn store_path(&self) -> String {
        crate::breakpad::store::relative_path(&self.name, &self.debug_id)
    }

    fn len(&self) -> Result<u64, String> {
        std::fs::metadata(&self.path)
            .map(|m| m.len())
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

/// What happened to one symbol file (or, for Tecken, one zip of them).
#[derive(Debug, PartialEq, Eq)]
pub enum Sent {
    Uploaded,
    /// The server already had it (v2 `FOUND`, or `DUPLICATE_DATA`).
    AlreadyThere,
}

/// Where and how to upload.
#[derive(Debug, Clone)]
pub struct Uploader {
    pub url: String,
    pub protocol: Protocol,
    pub token: Option<String>,
    pub timeout: Duration,
    /// Further attempts after a failure that may pass.
    pub retries: u32,
    /// Tecken: the most bytes of symbol files put in one zip.
    pub zip_limit: u64,
}

/// Tecken refuses uploads over 2 GB; its documentation asks for zips under 1.5 GB.
pub const TECKEN_ZIP_LIMIT: u64 = 1_500_000_000;

impl Uploader {
    /// An uploader for `url`, the token from the environment. Errors when the protocol
    /// needs a token and there is none.
    pub fn new(url: &str, protocol: Protocol) -> Result<Uploader, String> {
        let token = std::env::var(TOKEN_VAR).ok().filter(|t| !t.is_empty());
        if token.is_none() && protocol != Protocol::SymUploadV1 {
            return Err(format!(
                "--upload-protocol {}: set the API key or token in {TOKEN_VAR}",
                match protocol {
                    Protocol::SymUploadV2 => "sym-upload-v2",
                    _ => "tecken",
                }
            ));
        }
        Ok(Uploader {
            // As given: Tecken's endpoint is `/upload/`, and a POST redirected to add
            // the slash would lose its body.
            url: url.to_string(),
            protocol,
            token,
            timeout: Duration::from_secs(300),
            retries: 3,
            zip_limit: TECKEN_ZIP_LIMIT,
        })
    }

    /// Sends `files`: per file for the Breakpad protocols, in zips for Tecken. Each
    /// result names what it is about (a file, or a zip's files).
    pub fn send(&self, files: &[SymbolFile]) -> Vec<(String, Result<Sent, String>)> {
        let agent = crate::fetch::http::agent(self.timeout);
        match self.protocol {
            Protocol::SymUploadV1 => files
                .iter()
                .map(|f| (f.path.display().to_string(), v1::send(self, &agent, f)))
                .collect(),
            Protocol::SymUploadV2 => files
                .iter()
                .map(|f| (f.path.display().to_string(), v2::send(self, &agent, f)))
                .collect(),
            Protocol::Tecken => tecken::send(self, &agent, files),
        }
    }
}

/// One file part of a form: field name, file name, content type, the file.
struct FilePart<'a> {
    field: &'a str,
    filename: &'a str,
    content_type: &'a str,
    path: &'a Path,
}

/// POSTs `form` with `file` as its last part to the upload URL, with `headers`;
/// `expected` is the status the protocol calls success.
fn post_form(
    up: &Uploader,
    agent: &ureq::Agent,
    form: &multipart::Form,
    file: &FilePart,
    headers: &[(&str, &str)],
    expected: u16,
) -> Result<Sent, String> {
    use crate::fetch::http::{self, Outcome};
    let outcome = http::with_retries(up.retries, || {
        let (len, body) = form
            .with_file(file.field, file.filename, file.content_type, file.path)
            .map_err(|e| Box::new(ureq::Error::from(e)))?;
        let mut request = agent
            .post(&up.url)
            .set("Content-Type", &form.content_type())
            .set("Content-Length", &len.to_string());
        for (name, value) in headers {
            request = request.set(name, value);
        }
        request.send(body).map_err(Box::new)
    });
    match outcome {
        Outcome::Ok(r) if r.status() == expected => Ok(Sent::Uploaded),
        Outcome::Ok(r) => Err(refused(&up.url, r.status(), "")),
        Outcome::Status(code, body) => Err(refused(&up.url, code, &body)),
        Outcome::Unreachable(e) => Err(format!("{}: {e}", up.url)),
    }
}

/// A failed request as a message: the server's status and the start of its answer.
fn refused(what: &str, code: u16, body: &str) -> String {
    let body = body.lines().next().unwrap_or("").trim();
    let body = body.get(..300).unwrap_or(body);
    if body.is_empty() {
        format!("{what}: the server answered {code}")
    } else {
        format!("{what}: the server answered {code}: {body}")
    }
}
