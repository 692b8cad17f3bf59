//! One HTTP client for the fetchers and uploaders: timeouts, and retries with backoff on
//! what may pass (5xx answers, refused or dropped connections), never on 4xx and never
//! on a server that stopped answering.

use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use super::{CONNECT_TIMEOUT, Limits, MIN_PROGRESS};

/// A request's outcome after retries.
pub(crate) enum Outcome {
    /// The response of a successful (2xx) request.
    Ok(Box<ureq::Response>),
    /// A 4xx, or a 5xx still there after the retries: status and body, for messages.
    Status(u16, String),
    /// The server could not be reached (or kept dropping the connection), or stopped
    /// answering.
    Unreachable(String),
}

/// Waits before each retry: doubling from 200 ms.
pub(crate) fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(200u64 << attempt.min(6))
}

/// An agent whose connections give up after [`CONNECT_TIMEOUT`] and whose reads and
/// writes give up after `timeout` without data.
pub(crate) fn agent(timeout: Duration) -> ureq::Agent {
    agent_with(
        &Limits {
            timeout,
            ..Limits::default()
        },
        OUR_AGENT,
    )
}

/// The user agent of our own requests.
pub(crate) const OUR_AGENT: &str = concat!("dumpsyms/", env!("CARGO_PKG_VERSION"));

/// The user agent Microsoft's symbol client (symsrv.dll) sends, which symbol servers
/// expect (some answer other agents differently, or not at all).
pub(crate) const SYMSRV_AGENT: &str = "Microsoft-Symbol-Server/10.0.0.0";

/// An agent for downloads under `limits`.
pub(crate) fn agent_with(limits: &Limits, user_agent: &str) -> ureq::Agent {
    // ureq's overall time-out would replace the read and write time-outs (a stalled
    // server would then be waited on for all of `max_time`): the whole time is held by
    // `Paced` instead, and no single wait is longer than it.
    let wait = limits
        .max_time
        .map_or(limits.timeout, |m| m.min(limits.timeout));
    ureq::AgentBuilder::new()
        .timeout_connect(wait.min(CONNECT_TIMEOUT))
        .timeout_read(wait)
        .timeout_write(wait)
        .user_agent(user_agent)
        .build()
}

/// Whether a transport error is a time-out: the server accepted and then said nothing.
fn timed_out(t: &ureq::Transport) -> bool {
    let mut source = std::error::Error::source(t);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
            );
        }
        source = e.source();
    }
    t.to_string().contains("timed out")
}

/// Sends the request `send` sends, up to `1 + retries` times. (`send` boxes its error:
/// ureq's is large.) A time-out is final: retrying a server that accepts and never
/// answers only multiplies the wait.
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
                let _ = response.into_reader().take(4096).read_to_string(&mut body);
                return Outcome::Status(code, body.trim().to_string());
            }
            Err(ureq::Error::Transport(t)) => {
                if timed_out(&t) {
                    return Outcome::Unreachable("no answer (timed out)".into());
                }
                if !last {
                    std::thread::sleep(backoff(attempt));
                    attempt += 1;
                    continue;
                }
                return Outcome::Unreachable(transport_message(&t));
            }
        }
    }
}

/// What went wrong, each part once: ureq's own words repeat its kind ("Network Error:
/// Network Error") and leave out the system's ("Connection refused").
fn transport_message(t: &ureq::Transport) -> String {
    let mut parts = vec![
        t.message()
            .map_or_else(|| t.kind().to_string(), str::to_string),
    ];
    if let Some(source) = std::error::Error::source(t) {
        let source = source.to_string();
        if !parts.contains(&source) {
            parts.push(source);
        }
    }
    parts.join(": ")
}

/// The body of a small text answer (at most 64 KiB): `None` for a 404.
pub(crate) fn fetch_text(
    limits: &Limits,
    user_agent: &str,
    url: &str,
) -> Result<Option<String>, String> {
    let agent = agent_with(limits, user_agent);
    match with_retries(2, || agent.get(url).call().map_err(Box::new)) {
        Outcome::Ok(response) => {
            let mut body = String::new();
            response
                .into_reader()
                .take(64 << 10)
                .read_to_string(&mut body)
                .map_err(|e| format!("the answer is not text: {e}"))?;
            Ok(Some(body))
        }
        Outcome::Status(404, _) => Ok(None),
        Outcome::Status(code, body) => Err(format!("answered {code}: {}", first_line(&body))),
        Outcome::Unreachable(e) => Err(format!("unreachable: {e}")),
    }
}

/// What [`download`] did.
pub(crate) enum Download {
    /// Saved at the target path, and verified.
    Saved,
    /// The server does not have it (404).
    Missing,
    /// Why it could not be had: a failing or unreachable server, a file that is not
    /// what was asked for, or a cache that cannot be written. One line, for a warning.
    Failed(String),
}

/// A check of a downloaded (or cached) file: `Err` says what it is instead.
pub(crate) type Verify<'a> = &'a dyn Fn(&Path) -> Result<(), String>;

/// GETs `url` (with retries) into `target`, atomically and only once `verify` accepts
/// it: a cut transfer, an error page served with 200 or another build's file never
/// lands where a cache expects good ones. `what` names the server in messages.
pub(crate) fn download(
    limits: &Limits,
    user_agent: &str,
    retries: u32,
    url: &str,
    target: &Path,
    what: &str,
    verify: Verify,
) -> Download {
    let agent = agent_with(limits, user_agent);
    // The whole time counts from the request, not from the first byte of the answer.
    let started = Instant::now();
    match with_retries(retries, || agent.get(url).call().map_err(Box::new)) {
        Outcome::Ok(response) => match save(limits, started, target, *response, verify) {
            Ok(()) => Download::Saved,
            Err(e) => Download::Failed(format!("{what}: {url}: {e}")),
        },
        Outcome::Status(404, _) => Download::Missing,
        Outcome::Status(code, body) => Download::Failed(format!(
            "{what} answered {code} for {url}: {}",
            first_line(&body)
        )),
        Outcome::Unreachable(e) => Download::Failed(format!("{what} is unreachable: {e}")),
    }
}

fn save(
    limits: &Limits,
    started: Instant,
    path: &Path,
    response: ureq::Response,
    verify: Verify,
) -> Result<(), String> {
    if let Some(len) = response
        .header("Content-Length")
        .and_then(|l| l.trim().parse::<u64>().ok())
        && len > limits.max_size
    {
        return Err(format!(
            "the file is {len} bytes, over the limit of {} bytes",
            limits.max_size
        ));
    }
    let content_type = response.content_type().to_string();
    let cache = |e: std::io::Error| format!("cannot cache it in {}: {e}", path.display());
    let mut file = crate::output::AtomicFile::create(path).map_err(cache)?;
    let mut body = Paced::new(response.into_reader(), limits, started);
    std::io::copy(&mut body, file.writer()).map_err(|e| match body.stopped.take() {
        Some(why) => why,
        None => format!("the transfer broke: {e}"),
    })?;
    file.flush().map_err(cache)?;
    verify(file.written_path()).map_err(|why| {
        if content_type.starts_with("text/") {
            format!("answered {content_type}, not the file asked for ({why})")
        } else {
            why
        }
    })?;
    file.commit().map_err(cache)
}

/// A response body held to [`Limits`]: at most `max_size` bytes, at least
/// [`MIN_PROGRESS`] bytes per `timeout`, and done within `max_time`. Why it stopped is
/// kept for the message (the io error says only that it did).
struct Paced<R> {
    inner: R,
    limits: Limits,
    started: Instant,
    window: Instant,
    in_window: u64,
    total: u64,
    stopped: Option<String>,
}

impl<R: Read> Paced<R> {
    fn new(inner: R, limits: &Limits, started: Instant) -> Self {
        let now = Instant::now();
        Paced {
            inner,
            limits: *limits,
            started,
            window: now,
            in_window: 0,
            total: 0,
            stopped: None,
        }
    }

    fn stop(&mut self, why: String) -> std::io::Error {
        self.stopped = Some(why.clone());
        std::io::Error::other(why)
    }
}

impl<R: Read> Read for Paced<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = match self.inner.read(buf) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
                ) =>
            {
                let secs = self.limits.timeout.as_secs_f64();
                return Err(self.stop(format!("no data for {secs:.0} s")));
            }
            Err(e) => return Err(e),
        };
        self.total += n as u64;
        self.in_window += n as u64;
        if self.total > self.limits.max_size {
            let max = self.limits.max_size;
            return Err(self.stop(format!("the file is over the limit of {max} bytes")));
        }
        let now = Instant::now();
        if let Some(max) = self.limits.max_time
            && now.duration_since(self.started) > max
        {
            let secs = max.as_secs_f64();
            return Err(self.stop(format!("not done within {secs:.0} s")));
        }
        if now.duration_since(self.window) >= self.limits.timeout {
            if self.in_window < MIN_PROGRESS {
                let (got, secs) = (self.in_window, self.limits.timeout.as_secs_f64());
                return Err(self.stop(format!(
                    "sent {got} bytes in {secs:.0} s (at least {MIN_PROGRESS} are needed to go on)"
                )));
            }
            self.window = now;
            self.in_window = 0;
        }
        Ok(n)
    }
}

/// A cached file that `verify` rejects is removed, so that it is fetched again rather
/// than trusted on every later run; true when the cached file is good.
pub(crate) fn cached_is_good(path: &Path, verify: Verify) -> bool {
    if !path.metadata().is_ok_and(|m| m.is_file() && m.len() > 0) {
        return false;
    }
    match verify(path) {
        Ok(()) => true,
        Err(_) => {
            let _ = std::fs::remove_file(path);
            false
        }
    }
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
