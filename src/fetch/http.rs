//! One HTTP client for the fetchers and uploaders: timeouts, and retries with backoff on
//! what may pass (5xx answers, refused or dropped connections), never on 4xx and never
//! on a server that stopped answering.
//!
//! Every wait is bounded on the wall clock: connecting, the whole of a response's status
//! line and headers (a server dripping them a byte at a time is given up on after the
//! timeout, as one dripping its body is), each read, the whole request when the caller
//! has a time limit, and a `Retry-After` pause, which is waited only when it fits in
//! what is left of the caller's time (else the server is given up on for the run).

use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

pub(crate) use super::local::{
    Download, HttpError, OUR_AGENT, SYMSRV_AGENT, Verify, cached_is_good, first_line,
};
use super::{CONNECT_TIMEOUT, Limits, MIN_RATE, redact};

/// A response, its body still to be read.
pub(crate) type Response = ureq::http::Response<ureq::Body>;

/// What one send of a request gives. (The error is boxed: ureq's is large.)
pub(crate) type Sent = Result<Response, Box<ureq::Error>>;

/// A request's outcome after retries.
pub(crate) enum Outcome {
    /// The response of a successful (2xx) request.
    Ok(Box<Response>),
    /// A 4xx, or a 5xx still there after the retries: status and body, for messages.
    Status(u16, String),
    /// The server could not be reached (or kept dropping the connection), stopped
    /// answering, or asked for a pause longer than the time left.
    Unreachable(String),
}

/// Waits before each retry: doubling from 200 ms.
pub(crate) fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(200u64 << attempt.min(6))
}

/// An agent whose connections give up after [`CONNECT_TIMEOUT`] and whose reads and
/// writes, and the whole of each response's headers, give up after `timeout`.
pub(crate) fn agent(timeout: Duration) -> ureq::Agent {
    agent_with(
        &Limits {
            timeout,
            ..Limits::default()
        },
        OUR_AGENT,
    )
}

/// An agent for downloads under `limits`: each request is also bounded by `max_time`
/// on the wall clock, when there is one.
pub(crate) fn agent_with(limits: &Limits, user_agent: &str) -> ureq::Agent {
    let wait = limits
        .max_time
        .map_or(limits.timeout, |m| m.min(limits.timeout));
    ureq::Agent::config_builder()
        // Statuses are answers to read (a 404 is "not there", a 429 a pause), and
        // redirects are followed by hand (see `get`).
        .http_status_as_error(false)
        .max_redirects(0)
        // As before: no proxy from the environment (it would also carry the requests
        // of a test's loopback server elsewhere).
        .proxy(None)
        .user_agent(user_agent)
        .timeout_connect(Some(wait.min(CONNECT_TIMEOUT)))
        .timeout_per_read(Some(wait))
        .timeout_per_write(Some(wait))
        // The low-speed rule over the status line and headers: a few hundred bytes that
        // take longer than the timeout are a stalled server, however they trickle.
        .timeout_recv_response(Some(wait))
        .timeout_per_call(limits.max_time)
        .build()
        .into()
}

/// `request` to `url` bounded by `left` in all (when given), and with the user and
/// password `url` carries sent as `Authorization: Basic`, as curl and ureq 2 send them
/// (a protected symbol store is often given as `https://user:token@host/`). Redirects
/// keep them only within the same server: a relative `Location` keeps the URL's user,
/// an absolute one names its own.
pub(crate) fn prepared<B>(
    request: ureq::RequestBuilder<B>,
    url: &str,
    left: Option<Duration>,
) -> ureq::RequestBuilder<B> {
    let request = request.config().timeout_per_call(left).build();
    match basic_auth(url) {
        Some(value) => request.header("Authorization", value),
        None => request,
    }
}

/// `Basic …` for a URL with a user or a password; the value is a secret of the run.
fn basic_auth(url: &str) -> Option<String> {
    use base64::Engine as _;
    let parsed = url::Url::parse(url).ok()?;
    if parsed.username().is_empty() && parsed.password().is_none() {
        return None;
    }
    let user = redact::percent_decoded(parsed.username());
    let password = redact::percent_decoded(parsed.password().unwrap_or(""));
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    redact::secret(&token);
    Some(format!("Basic {token}"))
}

/// Whether an error is a time-out: the server accepted and then said too little.
fn timed_out(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::Timeout(_) => true,
        ureq::Error::Io(io) => io_timed_out(io),
        _ => false,
    }
}

fn io_timed_out(e: &std::io::Error) -> bool {
    if matches!(
        e.kind(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
    ) {
        return true;
    }
    // ureq's body reader wraps its own time-out in an io error.
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<ureq::Error>())
        .is_some_and(timed_out)
}

/// At most this many redirects are followed for one GET (ureq's and most clients'
/// default).
const MAX_REDIRECTS: usize = 5;

/// Without a time limit of the caller's, the most a run waits on one server's
/// `Retry-After` pauses in all: a rate-limited server holds a dump or a symbolize run
/// this long at most, then is given up on for the run.
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

/// Answers that say "later" (`429 Too Many Requests`, `503 Service Unavailable`) are
/// retried this many times at least, whatever the retries asked for, while the pauses
/// fit in the time left: a rate limit should slow a run, not fail it.
const LATER_RETRIES: u32 = 6;

/// Sends the request `send` sends to `url`, up to `1 + retries` times, all by
/// `deadline` when there is one. Redirects are not followed: an upload's body cannot be
/// sent again to wherever a server points (see [`get`] for downloads). A time-out is
/// final, and the server is not asked again in this run: retrying a server that accepts
/// and never answers only multiplies the wait.
pub(crate) fn with_retries(
    retries: u32,
    url: &str,
    deadline: Option<Instant>,
    send: impl FnMut() -> Sent,
) -> Outcome {
    match attempt(retries, url, deadline, send) {
        Step::Done(outcome) => outcome,
        Step::Redirect(code, location) => Outcome::Status(
            code,
            format!(
                "redirected to {}, which is not followed for an upload",
                redact::text(&location)
            ),
        ),
    }
}

/// GETs `url` through `agent`, with retries, following at most [`MAX_REDIRECTS`]
/// redirects, each only to an `http` or `https` URL with a host (ureq 2's own following
/// panicked on a `Location: file:///etc/passwd`); all by `deadline` when there is one.
pub(crate) fn get(
    agent: &ureq::Agent,
    retries: u32,
    url: &str,
    deadline: Option<Instant>,
) -> Outcome {
    request(agent, Method::Get(None), retries, url, deadline)
}

/// Whether `url` is there: a HEAD answered 2xx (true) or 404 or 410 (false), following
/// redirects as [`get`] does; any other answer is an error, for a message.
pub(crate) fn exists(agent: &ureq::Agent, retries: u32, url: &str) -> Result<bool, HttpError> {
    match request(agent, Method::Head, retries, url, None) {
        Outcome::Ok(_) => Ok(true),
        Outcome::Status(404 | 410, _) => Ok(false),
        Outcome::Status(code, body) => Err(HttpError::Answered {
            code,
            line: (!body.is_empty()).then(|| first_line(&body).to_string()),
        }),
        Outcome::Unreachable(e) => Err(HttpError::Unreachable(e)),
    }
}

#[derive(Clone, Copy)]
enum Method<'a> {
    /// With the `Accept` header given, if any.
    Get(Option<&'a str>),
    Head,
}

fn request(
    agent: &ureq::Agent,
    method: Method,
    retries: u32,
    url: &str,
    deadline: Option<Instant>,
) -> Outcome {
    let mut at = url.to_string();
    for _ in 0..=MAX_REDIRECTS {
        let request = at.clone();
        let send = || {
            // Each hop within what is left of the whole time, not a new one.
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            match method {
                Method::Get(None) => prepared(agent.get(&request), &request, left).call(),
                Method::Get(Some(accept)) => prepared(agent.get(&request), &request, left)
                    .header("Accept", accept)
                    .call(),
                Method::Head => prepared(agent.head(&request), &request, left).call(),
            }
            .map_err(Box::new)
        };
        match attempt(retries, &at, deadline, send) {
            Step::Done(outcome) => return outcome,
            Step::Redirect(code, location) => match redirect_target(&at, &location) {
                Ok(next) => at = next,
                Err(why) => return Outcome::Status(code, why.to_string()),
            },
        }
    }
    Outcome::Status(
        310,
        format!(
            "more than {MAX_REDIRECTS} redirects (the last to {})",
            redact::url(&at)
        ),
    )
}

/// Why a redirect is not followed; the URLs as they may be shown (redacted).
#[derive(Debug, thiserror::Error)]
enum RedirectError {
    #[error("{from}: {source}")]
    Base {
        from: String,
        #[source]
        source: url::ParseError,
    },
    #[error("redirected to {to:?}, not a URL ({source})")]
    NotUrl {
        to: String,
        #[source]
        source: url::ParseError,
    },
    #[error("redirected to {0}, which is not followed: only http and https URLs with a host are")]
    NotFollowed(String),
}

/// Where a redirect from `from` to `location` leads, if it may be followed.
fn redirect_target(from: &str, location: &str) -> Result<String, RedirectError> {
    let shown = crate::untrusted::for_terminal(&redact::text(first_line(location)));
    let base = url::Url::parse(from).map_err(|source| RedirectError::Base {
        from: redact::url(from).into_owned(),
        source,
    })?;
    let next = base
        .join(location)
        .map_err(|source| RedirectError::NotUrl {
            to: shown.to_string(),
            source,
        })?;
    if !matches!(next.scheme(), "http" | "https") || next.host_str().is_none_or(str::is_empty) {
        return Err(RedirectError::NotFollowed(shown.to_string()));
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
    deadline: Option<Instant>,
    mut send: impl FnMut() -> Sent,
) -> Step {
    let server = server_of(url);
    let mut attempt = 0;
    loop {
        if let Some(why) = gave_up_on(&server) {
            return Step::Done(Outcome::Unreachable(why));
        }
        if let Err(why) = wait_out_pause(&server, deadline) {
            return Step::Done(Outcome::Unreachable(why.to_string()));
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Step::Done(Outcome::Unreachable("out of time".into()));
        }
        let later_retries = retries.max(LATER_RETRIES);
        let response = match send() {
            Ok(response) => response,
            Err(e) => {
                if timed_out(&e) {
                    give_up_on(&server, "it stopped answering");
                    return Step::Done(Outcome::Unreachable("no answer (timed out)".into()));
                }
                if attempt < retries {
                    std::thread::sleep(backoff(attempt));
                    attempt += 1;
                    continue;
                }
                return Step::Done(Outcome::Unreachable(transport_message(&e)));
            }
        };
        let code = response.status().as_u16();
        match code {
            200..=299 => return Step::Done(Outcome::Ok(Box::new(response))),
            300..=399 => {
                let location = header(&response, "Location").unwrap_or("").to_string();
                return Step::Redirect(code, location);
            }
            429 | 503 if attempt < later_retries => {
                // Every worker waits it out, not only the one that was told; a pause
                // longer than the time left ends the server's turn in this run.
                let wait = retry_after(&response).unwrap_or_else(|| backoff(attempt));
                if let Err(why) = pause(&server, code, wait, deadline) {
                    return Step::Done(Outcome::Unreachable(why.to_string()));
                }
                attempt += 1;
            }
            500..=599 if attempt < retries => {
                std::thread::sleep(backoff(attempt));
                attempt += 1;
            }
            _ => {
                // A body to quote, bounded: a server's error page can be large, or
                // dripped.
                let body = read_body(response, 4096, QUOTE_TIME).unwrap_or_default();
                let body = String::from_utf8_lossy(&body).trim().to_string();
                return Step::Done(Outcome::Status(code, redact::text(&body).into_owned()));
            }
        }
    }
}

/// A response header's value, if it is text.
pub(crate) fn header<'a>(response: &'a Response, name: &str) -> Option<&'a str> {
    response.headers().get(name)?.to_str().ok()
}

/// `scheme://host:port` of a URL: what pauses and give-ups are kept by.
fn server_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => u.origin().ascii_serialization(),
        Err(_) => url.to_string(),
    }
}

/// How long a `Retry-After` header asks to wait: seconds, or an HTTP date; at most a
/// day (anything longer is as good as never).
fn retry_after(response: &Response) -> Option<Duration> {
    let value = header(response, "Retry-After")?.trim();
    let wait = match value.parse::<u64>() {
        Ok(secs) => Duration::from_secs(secs),
        Err(_) => httpdate::parse_http_date(value)
            .ok()?
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    };
    Some(wait.min(Duration::from_secs(86_400)))
}

/// The run's memory of servers: pauses they asked for, the time waited on them, and
/// those given up on (with why).
#[derive(Default)]
struct Servers {
    paused_until: std::collections::HashMap<String, Instant>,
    waited: std::collections::HashMap<String, Duration>,
    given_up: std::collections::HashMap<String, String>,
}

static SERVERS: std::sync::LazyLock<std::sync::Mutex<Servers>> =
    std::sync::LazyLock::new(Default::default);

fn servers() -> std::sync::MutexGuard<'static, Servers> {
    SERVERS.lock().unwrap_or_else(|e| e.into_inner())
}

/// How much longer the caller may wait on `server`: until its deadline, or what is left
/// of the run's [`PATIENCE`] with that server.
fn time_left(s: &Servers, server: &str, deadline: Option<Instant>) -> Duration {
    match deadline {
        Some(d) => d.saturating_duration_since(Instant::now()),
        None => PATIENCE.saturating_sub(s.waited.get(server).copied().unwrap_or_default()),
    }
}

/// A server's pause that does not fit in the time left for it (`what` qualifies the
/// pause: the status that asked for it, or "more").
#[derive(Debug, thiserror::Error)]
#[error("it asked for a pause of {} s {what} with {} s left for it", wait.as_secs(), left.as_secs())]
struct PauseTooLong {
    wait: Duration,
    what: String,
    left: Duration,
}

/// Whether a pause of `wait` fits in the time left for `server`; when it does not, the
/// server is given up on for the run, and why is the error.
fn fits(
    s: &mut Servers,
    server: &str,
    wait: Duration,
    deadline: Option<Instant>,
    what: &str,
) -> Result<(), PauseTooLong> {
    let left = time_left(s, server, deadline);
    if wait <= left {
        return Ok(());
    }
    let why = PauseTooLong {
        wait,
        what: what.to_string(),
        left,
    };
    s.given_up.insert(server.to_string(), why.to_string());
    Err(why)
}

/// Records a pause of `wait` that `server` asked for with `code`, and waits it; or,
/// when it is longer than the time left, gives up on the server for the run.
fn pause(
    server: &str,
    code: u16,
    wait: Duration,
    deadline: Option<Instant>,
) -> Result<(), PauseTooLong> {
    {
        let mut s = servers();
        fits(
            &mut s,
            server,
            wait,
            deadline,
            &format!("(answering {code})"),
        )?;
        let until = Instant::now() + wait;
        let at = s.paused_until.entry(server.to_string()).or_insert(until);
        *at = (*at).max(until);
    }
    wait_out_pause(server, deadline)
}

/// Waits out a pause `server` asked for, if any, unless it ends past what is left.
fn wait_out_pause(server: &str, deadline: Option<Instant>) -> Result<(), PauseTooLong> {
    let wait = {
        let mut s = servers();
        let Some(until) = s.paused_until.get(server).copied() else {
            return Ok(());
        };
        let wait = until.saturating_duration_since(Instant::now());
        fits(&mut s, server, wait, deadline, "more")?;
        *s.waited.entry(server.to_string()).or_default() += wait;
        wait
    };
    std::thread::sleep(wait);
    Ok(())
}

/// Gives up on `server` for the rest of the run, saying `why` when it is asked again.
pub(crate) fn give_up_on(server: &str, why: &str) {
    servers()
        .given_up
        .entry(server_of(server))
        .or_insert_with(|| why.to_string());
}

/// Why a server is not asked: it was given up on earlier in this run.
fn gave_up_on(server: &str) -> Option<String> {
    servers()
        .given_up
        .get(server)
        .map(|why| format!("not asked: {why} earlier in this run"))
}

/// What went wrong, each part once: the error's own words, and the system's beneath.
fn transport_message(e: &ureq::Error) -> String {
    let mut parts = vec![e.to_string()];
    if let Some(source) = std::error::Error::source(e) {
        let source = source.to_string();
        if !parts.iter().any(|p| p.contains(&source)) {
            parts.push(source);
        }
    }
    redact::text(&parts.join(": ")).into_owned()
}

/// The body of a small text answer (at most 64 KiB): `None` for a 404.
pub(crate) fn fetch_text(
    limits: &Limits,
    user_agent: &str,
    url: &str,
) -> Result<Option<String>, HttpError> {
    let agent = agent_with(limits, user_agent);
    let started = Instant::now();
    match get(&agent, 2, url, limits.max_time.map(|m| started + m)) {
        Outcome::Ok(response) => {
            let within = limits.max_time.unwrap_or(limits.timeout);
            let body = read_body(*response, 64 << 10, within).inspect_err(|_| {
                give_up_on(url, "it stalled");
            })?;
            String::from_utf8(body)
                .map(Some)
                .map_err(|_| HttpError::NotText)
        }
        Outcome::Status(404, _) => Ok(None),
        Outcome::Status(code, body) => Err(HttpError::Answered {
            code,
            line: Some(first_line(&body).to_string()),
        }),
        Outcome::Unreachable(e) => Err(HttpError::Unreachable(e)),
    }
}

/// How long a server's error page is read for, to quote its first line.
const QUOTE_TIME: Duration = Duration::from_secs(5);

/// At most `max` bytes of a response's body, all within `within`: a small answer (an
/// error page to quote, a JSON answer, a `file.ptr`) dripped by the server is not
/// waited on for longer, as a download is not (see [`Paced`]).
pub(crate) fn read_body(
    response: Response,
    max: u64,
    within: Duration,
) -> Result<Vec<u8>, HttpError> {
    let until = Instant::now() + within;
    let mut reader = response.into_body().into_reader().take(max);
    let mut body = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        if Instant::now() > until {
            return Err(HttpError::NotInTime(within));
        }
        match reader.read(&mut buf) {
            Ok(0) => return Ok(body),
            Ok(n) => body.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if io_timed_out(&e) => return Err(HttpError::NotInTime(within)),
            Err(e) => return Err(HttpError::BrokeOff(e)),
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
    download_accepting(limits, user_agent, retries, url, None, target, what, verify)
}

/// [`download`], asking with an `Accept` header when one is given.
#[allow(clippy::too_many_arguments)]
pub(crate) fn download_accepting(
    limits: &Limits,
    user_agent: &str,
    retries: u32,
    url: &str,
    accept: Option<&str>,
    target: &Path,
    what: &str,
    verify: Verify,
) -> Download {
    let agent = agent_with(limits, user_agent);
    // The whole time counts from the request, not from the first byte of the answer.
    let started = Instant::now();
    let deadline = limits.max_time.map(|m| started + m);
    let (what, shown) = (redact::text(what), redact::url(url));
    match request(&agent, Method::Get(accept), retries, url, deadline) {
        Outcome::Ok(response) => match save(limits, started, target, *response, verify) {
            Ok(()) => Download::Saved,
            Err(e) => Download::Failed(format!("{what}: {shown}: {e}")),
        },
        Outcome::Status(404, _) => Download::Missing,
        // A server that serves only what it is asked for exactly: asked again, plainly.
        Outcome::Status(406, _) if accept.is_some() => download_accepting(
            limits, user_agent, retries, url, None, target, &what, verify,
        ),
        Outcome::Status(code, body) => Download::Failed(format!(
            "{what} answered {code} for {shown}: {}",
            first_line(&body)
        )),
        Outcome::Unreachable(e) => Download::Failed(format!("{what} is unreachable: {e}")),
    }
}

/// Why a download's answer is not kept.
#[derive(Debug, thiserror::Error)]
enum SaveError {
    #[error("the file is {len} bytes, over the limit of {max} bytes")]
    TooLarge { len: u64, max: u64 },
    #[error("cannot cache it in {}: {source}", path.display())]
    Cache {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Held to the limits, the transfer was stopped: why, in [`Paced`]'s words.
    #[error("{0}")]
    Stopped(String),
    #[error("the transfer broke: {0}")]
    Broke(#[source] std::io::Error),
    /// Not the file asked for; `text` the media type of an answer sent as text.
    #[error("{}", match text { Some(t) => format!("answered {t}, not the file asked for ({source})"), None => source.to_string() })]
    NotTheFile {
        text: Option<String>,
        #[source]
        source: crate::error::NotTheFile,
    },
}

fn save(
    limits: &Limits,
    started: Instant,
    path: &Path,
    response: Response,
    verify: Verify,
) -> Result<(), SaveError> {
    if let Some(len) =
        header(&response, "Content-Length").and_then(|l| l.trim().parse::<u64>().ok())
        && len > limits.max_size
    {
        return Err(SaveError::TooLarge {
            len,
            max: limits.max_size,
        });
    }
    // The media type alone, without its parameters (`; charset=…`).
    let content_type = header(&response, "Content-Type")
        .and_then(|t| t.split(';').next())
        .unwrap_or("")
        .trim()
        .to_string();
    let cache = |source| SaveError::Cache {
        path: path.to_path_buf(),
        source,
    };
    let mut file = crate::output::AtomicFile::create(path).map_err(cache)?;
    // The server that answered (a redirect's target) is the one held to the pace.
    let answered = ureq::ResponseExt::get_uri(&response).to_string();
    let mut body = Paced::new(
        response.into_body().into_reader(),
        &answered,
        limits,
        started,
    );
    std::io::copy(&mut body, file.writer()).map_err(|e| match body.stopped.take() {
        Some(why) => SaveError::Stopped(why),
        None => SaveError::Broke(e),
    })?;
    file.flush().map_err(cache)?;
    verify(file.written_path()).map_err(|source| SaveError::NotTheFile {
        text: content_type
            .starts_with("text/")
            .then(|| content_type.clone()),
        source,
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
            Err(e) if io_timed_out(&e) => {
                if let Some(max) = self.limits.max_time
                    && self.started.elapsed() >= max
                {
                    let secs = max.as_secs_f64();
                    give_up_on(&self.server, "it was too slow");
                    return Err(self.stop(format!("not done within {secs:.0} s")));
                }
                let secs = self.limits.timeout.as_secs_f64();
                give_up_on(&self.server, "it stopped sending");
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
            give_up_on(&self.server, "it was too slow");
            return Err(self.stop(format!("not done within {secs:.0} s")));
        }
        if now.duration_since(self.window) >= self.limits.timeout {
            let needed = MIN_RATE.saturating_mul(self.limits.timeout.as_secs().max(1));
            if self.in_window < needed {
                let (got, secs) = (self.in_window, self.limits.timeout.as_secs_f64());
                give_up_on(&self.server, "it was too slow");
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

    fn answer(head: &str) -> Response {
        let mut response = ureq::http::Response::builder().status(429);
        if let Some((name, value)) = head.trim_end().split_once(": ") {
            response = response.header(name, value);
        }
        response.body(ureq::Body::builder().data("")).unwrap()
    }

    #[test]
    fn retry_after_in_seconds_or_as_a_date_capped() {
        assert_eq!(
            retry_after(&answer("Retry-After: 15\r\n")),
            Some(Duration::from_secs(15))
        );
        assert_eq!(
            retry_after(&answer("Retry-After: 999999\r\n")),
            Some(Duration::from_secs(86_400))
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
            assert!(matches!(e, RedirectError::NotFollowed(_)), "{bad}: {e}");
            assert!(e.to_string().contains("not followed"), "{bad}: {e}");
        }
        assert!(redirect_target(from, "http://").is_err());
    }
}
