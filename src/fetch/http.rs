//! One HTTP client for the fetchers and uploaders: timeouts, and retries with backoff on
//! what may pass (5xx answers, refused or dropped connections), never on 4xx and never
//! on a server that stopped answering.

use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

pub(crate) use super::local::{
    Download, OUR_AGENT, SYMSRV_AGENT, Verify, cached_is_good, first_line,
};
use super::{CONNECT_TIMEOUT, Limits, MIN_RATE};

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
        .redirects(0)
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

/// At most this many redirects are followed for one GET (ureq's and most clients'
/// default).
const MAX_REDIRECTS: usize = 5;

/// A server's `Retry-After` is honoured up to this long; a longer one is waited as this.
pub(crate) const MAX_PAUSE: Duration = Duration::from_secs(60);

/// Answers that say "later" (`429 Too Many Requests`, `503 Service Unavailable`) are
/// retried this many times at least, whatever the retries asked for: a rate limit should
/// slow a run, not fail it.
const LATER_RETRIES: u32 = 6;

/// Sends the request `send` sends to `url`, up to `1 + retries` times. (`send` boxes its
/// error: ureq's is large.) Redirects are not followed: an upload's body cannot be sent
/// again to wherever a server points (see [`get`] for downloads). A time-out is final,
/// and the server is not asked again in this run: retrying a server that accepts and
/// never answers only multiplies the wait.
pub(crate) fn with_retries(
    retries: u32,
    url: &str,
    send: impl FnMut() -> Result<ureq::Response, Box<ureq::Error>>,
) -> Outcome {
    match attempt(retries, url, send) {
        Step::Done(outcome) => outcome,
        Step::Redirect(code, location) => Outcome::Status(
            code,
            format!("redirected to {location}, which is not followed for an upload"),
        ),
    }
}

/// GETs `url` through `agent`, with retries, following at most [`MAX_REDIRECTS`]
/// redirects, each only to an `http` or `https` URL with a host: ureq's own following
/// panicked on a `Location: file:///etc/passwd`.
pub(crate) fn get(agent: &ureq::Agent, retries: u32, url: &str) -> Outcome {
    request(agent, "GET", retries, url)
}

/// Whether `url` is there: a HEAD answered 2xx (true) or 404 or 410 (false), following
/// redirects as [`get`] does; any other answer is an error, for a message.
pub(crate) fn exists(agent: &ureq::Agent, retries: u32, url: &str) -> Result<bool, String> {
    match request(agent, "HEAD", retries, url) {
        Outcome::Ok(_) => Ok(true),
        Outcome::Status(404 | 410, _) => Ok(false),
        Outcome::Status(code, body) if body.is_empty() => Err(format!("answered {code}")),
        Outcome::Status(code, body) => Err(format!("answered {code}: {}", first_line(&body))),
        Outcome::Unreachable(e) => Err(format!("unreachable: {e}")),
    }
}

fn request(agent: &ureq::Agent, method: &str, retries: u32, url: &str) -> Outcome {
    let mut at = url.to_string();
    for _ in 0..=MAX_REDIRECTS {
        let request = at.clone();
        let send = || agent.request(method, &request).call().map_err(Box::new);
        match attempt(retries, &at, send) {
            Step::Done(outcome) => return outcome,
            Step::Redirect(code, location) => match redirect_target(&at, &location) {
                Ok(next) => at = next,
                Err(why) => return Outcome::Status(code, why),
            },
        }
    }
    Outcome::Status(
        310,
        format!("more than {MAX_REDIRECTS} redirects (the last to {at})"),
    )
}

/// Where a redirect from `from` to `location` leads, if it may be followed.
fn redirect_target(from: &str, location: &str) -> Result<String, String> {
    let shown = crate::for_terminal(first_line(location));
    let base = url::Url::parse(from).map_err(|e| format!("{from}: {e}"))?;
    let next = base
        .join(location)
        .map_err(|e| format!("redirected to {shown:?}, not a URL ({e})"))?;
    if !matches!(next.scheme(), "http" | "https") || next.host_str().is_none_or(str::is_empty) {
        return Err(format!(
            "redirected to {shown}, which is not followed: only http and https URLs with a host are"
        ));
    }
    Ok(next.into())
}

/// What one request came to after its retries.
enum Step {
    Done(Outcome),
    /// A 3xx: its status and `Location` (empty when there is none).
    Redirect(u16, String),
}

fn attempt(
    retries: u32,
    url: &str,
    mut send: impl FnMut() -> Result<ureq::Response, Box<ureq::Error>>,
) -> Step {
    let server = server_of(url);
    if let Some(why) = gave_up_on(&server) {
        return Step::Done(Outcome::Unreachable(why));
    }
    let mut attempt = 0;
    loop {
        wait_out_pause(&server);
        let later_retries = retries.max(LATER_RETRIES);
        match send().map_err(|e| *e) {
            Ok(response) if (300..400).contains(&response.status()) => {
                let location = response.header("Location").unwrap_or("").to_string();
                return Step::Redirect(response.status(), location);
            }
            Ok(response) => return Step::Done(Outcome::Ok(Box::new(response))),
            Err(ureq::Error::Status(429 | 503, response)) if attempt < later_retries => {
                // Every worker waits it out, not only the one that was told.
                let wait = retry_after(&response).unwrap_or_else(|| backoff(attempt));
                pause(&server, wait);
                attempt += 1;
            }
            Err(ureq::Error::Status(code, response)) => {
                if code >= 500 && attempt < retries {
                    std::thread::sleep(backoff(attempt));
                    attempt += 1;
                    continue;
                }
                // A body to quote, bounded: a server's error page can be large, or
                // dripped.
                let body = read_body(response, 4096, QUOTE_TIME).unwrap_or_default();
                let body = String::from_utf8_lossy(&body).trim().to_string();
                return Step::Done(Outcome::Status(code, body));
            }
            Err(ureq::Error::Transport(t)) => {
                if timed_out(&t) {
                    give_up_on(&server);
                    return Step::Done(Outcome::Unreachable("no answer (timed out)".into()));
                }
                if attempt < retries {
                    std::thread::sleep(backoff(attempt));
                    attempt += 1;
                    continue;
                }
                return Step::Done(Outcome::Unreachable(transport_message(&t)));
            }
        }
    }
}

/// `scheme://host:port` of a URL: what pauses and give-ups are kept by.
fn server_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => u.origin().ascii_serialization(),
        Err(_) => url.to_string(),
    }
}

/// How long a `Retry-After` header asks to wait: seconds, or an HTTP date; at most
/// [`MAX_PAUSE`].
fn retry_after(response: &ureq::Response) -> Option<Duration> {
    let value = response.header("Retry-After")?.trim();
    let wait = match value.parse::<u64>() {
        Ok(secs) => Duration::from_secs(secs),
        Err(_) => httpdate::parse_http_date(value)
            .ok()?
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    };
    Some(wait.min(MAX_PAUSE))
}

/// The run's memory of servers: pauses they asked for, and those that stopped answering.
#[derive(Default)]
struct Servers {
    paused_until: std::collections::HashMap<String, Instant>,
    silent: std::collections::HashSet<String>,
}

static SERVERS: std::sync::LazyLock<std::sync::Mutex<Servers>> =
    std::sync::LazyLock::new(Default::default);

fn servers() -> std::sync::MutexGuard<'static, Servers> {
    SERVERS.lock().unwrap_or_else(|e| e.into_inner())
}

fn pause(server: &str, wait: Duration) {
    let until = Instant::now() + wait;
    let mut s = servers();
    let at = s.paused_until.entry(server.to_string()).or_insert(until);
    *at = (*at).max(until);
}

fn wait_out_pause(server: &str) {
    let until = servers().paused_until.get(server).copied();
    if let Some(until) = until {
        std::thread::sleep(until.saturating_duration_since(Instant::now()));
    }
}

fn give_up_on(server: &str) {
    servers().silent.insert(server.to_string());
}

/// Why a server is not asked: it stopped answering earlier in this run.
fn gave_up_on(server: &str) -> Option<String> {
    servers()
        .silent
        .contains(server)
        .then(|| "not asked: it stopped answering earlier in this run".to_string())
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
    match get(&agent, 2, url) {
        Outcome::Ok(response) => {
            let within = limits.max_time.unwrap_or(limits.timeout);
            let body = read_body(*response, 64 << 10, within)?;
            String::from_utf8(body)
                .map(Some)
                .map_err(|_| "the answer is not text".into())
        }
        Outcome::Status(404, _) => Ok(None),
        Outcome::Status(code, body) => Err(format!("answered {code}: {}", first_line(&body))),
        Outcome::Unreachable(e) => Err(format!("unreachable: {e}")),
    }
}

/// How long a server's error page is read for, to quote its first line.
const QUOTE_TIME: Duration = Duration::from_secs(5);

/// At most `max` bytes of a response's body, all within `within`: a small answer (an
/// error page to quote, a JSON answer, a `file.ptr`) dripped by the server is not
/// waited on for longer, as a download is not (see [`Paced`]).
pub(crate) fn read_body(
    response: ureq::Response,
    max: u64,
    within: Duration,
) -> Result<Vec<u8>, String> {
    let until = Instant::now() + within;
    let mut reader = response.into_reader().take(max);
    let mut body = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        if Instant::now() > until {
            let secs = within.as_secs_f64();
            return Err(format!("the answer was not sent within {secs:.0} s"));
        }
        match reader.read(&mut buf) {
            Ok(0) => return Ok(body),
            Ok(n) => body.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("the answer broke off: {e}")),
        }
    }
}

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
    match get(&agent, retries, url) {
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
    // The server that answered (a redirect's target) is the one held to the pace.
    let answered = response.get_url().to_string();
    let mut body = Paced::new(response.into_reader(), &answered, limits, started);
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

/// A response body held to [`Limits`]: at most `max_size` bytes, at least [`MIN_RATE`]
/// bytes a second over each `timeout`, and done within `max_time`. Why it stopped is
/// kept for the message (the io error says only that it did); a server too slow is not
/// asked again in the run.
struct Paced<R> {
    inner: R,
    server: String,
    limits: Limits,
    started: Instant,
    window: Instant,
    in_window: u64,
    total: u64,
    stopped: Option<String>,
}

impl<R: Read> Paced<R> {
    fn new(inner: R, url: &str, limits: &Limits, started: Instant) -> Self {
        let now = Instant::now();
        Paced {
            inner,
            server: server_of(url),
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
                give_up_on(&self.server);
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
            give_up_on(&self.server);
            return Err(self.stop(format!("not done within {secs:.0} s")));
        }
        if now.duration_since(self.window) >= self.limits.timeout {
            let needed = MIN_RATE.saturating_mul(self.limits.timeout.as_secs().max(1));
            if self.in_window < needed {
                let (got, secs) = (self.in_window, self.limits.timeout.as_secs_f64());
                give_up_on(&self.server);
                return Err(self.stop(format!(
                    "sent {got} bytes in {secs:.0} s (at least {needed} are needed to go on)"
                )));
            }
            self.window = now;
            self.in_window = 0;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(head: &str) -> ureq::Response {
        format!("HTTP/1.1 429 Too Many Requests\r\n{head}\r\n")
            .parse()
            .unwrap()
    }

    #[test]
    fn retry_after_in_seconds_or_as_a_date_capped() {
        assert_eq!(
            retry_after(&answer("Retry-After: 15\r\n")),
            Some(Duration::from_secs(15))
        );
        assert_eq!(
            retry_after(&answer("Retry-After: 86400\r\n")),
            Some(MAX_PAUSE)
        );
        let soon = std::time::SystemTime::now() + Duration::from_secs(30);
        let date = httpdate::fmt_http_date(soon);
        let wait = retry_after(&answer(&format!("Retry-After: {date}\r\n"))).unwrap();
        assert!(
            wait > Duration::from_secs(28) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        let past = answer("Retry-After: Fri, 31 Dec 1999 23:59:59 GMT\r\n");
        assert_eq!(retry_after(&past), Some(Duration::ZERO));
        assert_eq!(retry_after(&answer("Retry-After: soon\r\n")), None);
        assert_eq!(retry_after(&answer("")), None);
    }

    #[test]
    fn redirects_lead_only_to_http_urls_with_a_host() {
        let from = "http://symbols.example/a/b.sym";
        assert_eq!(
            redirect_target(from, "/storage/b.sym").unwrap(),
            "http://symbols.example/storage/b.sym"
        );
        assert_eq!(
            redirect_target(from, "https://bucket.example/x?sig=1").unwrap(),
            "https://bucket.example/x?sig=1"
        );
        for bad in ["file:///etc/passwd", "ftp://h/x", "data:,x"] {
            let e = redirect_target(from, bad).unwrap_err();
            assert!(e.contains("not followed"), "{bad}: {e}");
        }
        assert!(redirect_target(from, "http://").is_err());
    }
}
