//! One HTTP client for the fetchers and uploaders: timeouts, and retries with backoff on
//! what may pass (5xx answers, refused or dropped connections), never on 4xx.

use std::time::Duration;

/// A request's outcome after retries.
pub(crate) enum Outcome {
    /// The response of a successful (2xx) request.
    Ok(Box<ureq::Response>),
    /// A 4xx, or a 5xx still there after the retries: status and body, for messages.
    Status(u16, String),
    /// The server could not be reached (or kept dropping the connection).
    Unreachable(String),
}

/// Waits before each retry: doubling from 200 ms.
pub(crate) fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(200u64 << attempt.min(6))
}

/// An agent whose connections and reads give up after `timeout`.
pub(crate) fn agent(timeout: Duration) -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout_connect(timeout.min(Duration::from_secs(10)))
        .timeout(timeout)
        .user_agent(concat!("dumpsyms/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// Sends the request `send` sends, up to `1 + retries` times. (`send` boxes its error:
/// ureq's is large.)
pub(crate) fn with_retries(
    retries: u32,
    mut send: impl FnMut() -> Result<ureq::Response, Box<ureq::Error>>,
) -> Outcome {
    let mut attempt = 0;
    loop {
        let last = attempt >= retries;
        match send().map_err(|e| *e) {
            Ok(response) => return Outcome::Ok(Box::new(response)),
            Err(ureq::Error::Status(code, response)) => {
                if code >= 500 && !last {
                    std::thread::sleep(backoff(attempt));
                    attempt += 1;
                    continue;
                }
                // A body to quote, bounded: a server's error page can be large.
                let mut body = String::new();
                let _ = std::io::Read::read_to_string(
                    &mut std::io::Read::take(response.into_reader(), 4096),
                    &mut body,
                );
                return Outcome::Status(code, body.trim().to_string());
            }
            Err(ureq::Error::Transport(t)) => {
                if !last {
                    std::thread::sleep(backoff(attempt));
                    attempt += 1;
                    continue;
                }
                return Outcome::Unreachable(t.to_string());
            }
        }
    }
}

/// What [`download`] did.
pub(crate) enum Download {
    /// Saved at the target path.
    Saved,
    /// The server does not have it (404).
    Missing,
    /// Why it could not be had: a failing or unreachable server, or a cache that cannot
    /// be written. One line, for a warning.
    Failed(String),
}

/// GETs `url` (with retries) into `target`, atomically: a cut transfer never leaves a
/// partial file where a cache expects whole ones. `what` names the server in messages.
pub(crate) fn download(
    agent: &ureq::Agent,
    retries: u32,
    url: &str,
    target: &std::path::Path,
    what: &str,
) -> Download {
    match with_retries(retries, || agent.get(url).call().map_err(Box::new)) {
        Outcome::Ok(response) => match save(target, *response) {
            Ok(()) => Download::Saved,
            Err(e) => Download::Failed(format!(
                "{what}: cannot cache {url} in {}: {e}",
                target.display()
            )),
        },
        Outcome::Status(404, _) => Download::Missing,
        Outcome::Status(code, body) => Download::Failed(format!(
            "{what} answered {code} for {url}: {}",
            first_line(&body)
        )),
        Outcome::Unreachable(e) => Download::Failed(format!("{what} is unreachable: {e}")),
    }
}

fn save(path: &std::path::Path, response: ureq::Response) -> std::io::Result<()> {
    let mut file = crate::output::AtomicFile::create(path)?;
    std::io::copy(&mut response.into_reader(), file.writer())?;
    file.commit()
}

/// The first line of `s`, at most 200 bytes: what a message quotes of a server's answer.
pub(crate) fn first_line(s: &str) -> &str {
    let line = s.lines().next().unwrap_or("");
    let mut end = line.len().min(200);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}
