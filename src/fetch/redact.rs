//! Secrets kept out of everything the run prints: a URL's password, an API key sent in a
//! query, the upload token. CI logs are often public, and a server's answer can quote
//! the request back (a 401 page, a redirect's `Location`), so the rule is applied twice:
//! where a URL or a server's words are put into a message, and once more on every line
//! the command prints.
//!
//! A URL is shown as curl and git show it: `http://user:***@host/…`, and a query's
//! credential values (`key=`, `token=`, …) as `***`. Secrets the run holds (the token
//! from the environment, every password and key of the URLs it was given) are
//! registered with `secret` and replaced wherever they appear, percent-encoded or not.

use std::borrow::Cow;
use std::sync::{LazyLock, RwLock};

/// What a removed secret is shown as.
pub(crate) const MASK: &str = "***";

/// Query parameters whose values are credentials: Google's API key (sym-upload-v2),
/// tokens and signatures of presigned storage URLs.
const SECRET_PARAMS: &[&str] = &[
    "key",
    "api_key",
    "apikey",
    "token",
    "access_token",
    "auth",
    "password",
    "secret",
    "signature",
    "sig",
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
];

/// Secrets shorter than this are not searched for in free text (a two-letter password
/// would garble every message); a URL's password is still masked by its place.
const MIN_SECRET: usize = 4;

static SECRETS: LazyLock<RwLock<Vec<String>>> = LazyLock::new(Default::default);

/// Registers `value` (a token, a key, a password) as a secret of this run: from now on
/// [`text`] replaces it, as written and percent-decoded, wherever it appears.
pub(crate) fn secret(value: &str) {
    if value.len() < MIN_SECRET {
        return;
    }
    let mut secrets = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    for form in [value.to_string(), percent_decoded(value)] {
        if form.len() >= MIN_SECRET && !secrets.contains(&form) {
            secrets.push(form);
        }
    }
    // Longest first: a secret that holds another is replaced whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// Registers the password and the credential query values of `url` as secrets, and
/// gives it back as it may be shown.
pub fn url_with_secrets(url: &str) -> String {
    if let Some(parts) = Parts::of(url) {
        if let Some(password) = parts.password() {
            secret(password);
        }
        for value in parts.secret_values() {
            secret(value);
        }
    }
    self::url(url).into_owned()
}

/// `url` as it may be printed: its password and its query's credential values masked.
/// Anything that is not a URL comes back as it is.
pub(crate) fn url(url: &str) -> Cow<'_, str> {
    let Some(parts) = Parts::of(url) else {
        return Cow::Borrowed(url);
    };
    let mut cuts: Vec<std::ops::Range<usize>> = Vec::new();
    if let Some(p) = parts.password.clone() {
        cuts.push(p);
    }
    cuts.extend(parts.secret_value_ranges());
    if cuts.is_empty() {
        return Cow::Borrowed(url);
    }
    let mut out = String::with_capacity(url.len());
    let mut at = 0;
    for cut in cuts {
        out.push_str(&url[at..cut.start]);
        out.push_str(MASK);
        at = cut.end;
    }
    out.push_str(&url[at..]);
    Cow::Owned(out)
}

/// `s` (a message, a server's answer) with every URL in it shown as the run shows a URL (its password and credential values masked)
/// and every registered secret replaced by `***`.
pub fn text(s: &str) -> Cow<'_, str> {
    let mut out = match s.contains("://") {
        true => urls_in(s),
        false => Cow::Borrowed(s),
    };
    if out.contains('=')
        && let Cow::Owned(masked) = mask_query_pairs(&out)
    {
        out = Cow::Owned(masked);
    }
    let secrets = SECRETS.read().unwrap_or_else(|e| e.into_inner());
    for secret in secrets.iter() {
        if out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), MASK));
        }
    }
    out
}

/// Every URL of `s` masked.
fn urls_in(s: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0;
    let mut from = 0;
    while let Some(i) = s[from..].find("://") {
        let sep = from + i;
        let start = s[..sep]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || "+.-".contains(c)))
            .map_or(0, |p| p + 1);
        let end = s[sep..]
            .find(|c: char| c.is_whitespace() || "\"'<>`".contains(c))
            .map_or(s.len(), |p| sep + p);
        let shown = url(&s[start..end]);
        if let Cow::Owned(masked) = shown {
            out.push_str(&s[copied..start]);
            out.push_str(&masked);
            copied = end;
        }
        from = end.max(sep + 3);
    }
    if copied == 0 {
        return Cow::Borrowed(s);
    }
    out.push_str(&s[copied..]);
    Cow::Owned(out)
}

/// `name=value` pairs whose name is a credential, after `?`, `&` or a blank, masked.
fn mask_query_pairs(s: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0;
    let bytes = s.as_bytes();
    let mut i = 0;
    while let Some(eq) = s[i..].find('=').map(|p| i + p) {
        let name_start = s[..eq]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .map_or(0, |p| p + 1);
        let before = name_start.checked_sub(1).map(|b| bytes[b]);
        let name = &s[name_start..eq];
        let value_end = s[eq + 1..]
            .find(|c: char| c == '&' || c == '#' || c.is_whitespace() || "\"'<>".contains(c))
            .map_or(s.len(), |p| eq + 1 + p);
        let credential = SECRET_PARAMS.iter().any(|p| p.eq_ignore_ascii_case(name));
        let after_separator = matches!(
            before,
            None | Some(
                b'?' | b'&' | b' ' | b'\t' | b';' | b',' | b'"' | b'\'' | b'(' | b'[' | b'{'
            )
        );
        if credential && after_separator && value_end > eq + 1 {
            out.push_str(&s[copied..eq + 1]);
            out.push_str(MASK);
            copied = value_end;
        }
        i = value_end.max(eq + 1);
    }
    if copied == 0 {
        return Cow::Borrowed(s);
    }
    out.push_str(&s[copied..]);
    Cow::Owned(out)
}

/// Where a URL's password and query are, as byte ranges of it.
struct Parts<'a> {
    url: &'a str,
    password: Option<std::ops::Range<usize>>,
    query: Option<std::ops::Range<usize>>,
}

impl<'a> Parts<'a> {
    fn of(url: &'a str) -> Option<Parts<'a>> {
        let scheme_end = url.find("://")?;
        let scheme = &url[..scheme_end];
        if scheme.is_empty()
            || !scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+.-".contains(&b))
        {
            return None;
        }
        let authority_start = scheme_end + 3;
        let authority_end = url[authority_start..]
            .find(['/', '?', '#'])
            .map_or(url.len(), |p| authority_start + p);
        let authority = &url[authority_start..authority_end];
        let password = authority.rfind('@').and_then(|at| {
            let colon = authority[..at].find(':')?;
            (colon + 1 < at).then(|| authority_start + colon + 1..authority_start + at)
        });
        let query = url[authority_end..].find('?').map(|q| {
            let start = authority_end + q + 1;
            let end = url[start..].find('#').map_or(url.len(), |h| start + h);
            start..end
        });
        Some(Parts {
            url,
            password,
            query,
        })
    }

    fn password(&self) -> Option<&'a str> {
        self.password.clone().map(|r| &self.url[r])
    }

    /// Byte ranges of the credential values in the query, in order.
    fn secret_value_ranges(&self) -> Vec<std::ops::Range<usize>> {
        let Some(query) = self.query.clone() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut at = query.start;
        for pair in self.url[query.clone()].split('&') {
            if let Some((name, value)) = pair.split_once('=')
                && !value.is_empty()
                && SECRET_PARAMS
                    .iter()
                    .any(|p| p.eq_ignore_ascii_case(&percent_decoded(name)))
            {
                let start = at + name.len() + 1;
                out.push(start..start + value.len());
            }
            at += pair.len() + 1;
        }
        out
    }

    fn secret_values(&self) -> Vec<&'a str> {
        self.secret_value_ranges()
            .into_iter()
            .map(|r| &self.url[r])
            .collect()
    }
}

/// `s` with its `%XX` escapes decoded (invalid ones kept), lossily as UTF-8. By hand: the
/// `url` crate's decoder is only in builds with the `net` feature, and names are checked
/// (and secrets masked) without it too.
pub(crate) fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = s.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_urls_password_and_key_are_masked() {
        assert_eq!(
            url("http://u:pw@host:8080/a/b?x=1"),
            "http://u:***@host:8080/a/b?x=1"
        );
        assert_eq!(url("https://u@host/a"), "https://u@host/a");
        assert_eq!(
            url("https://h/v1/x:checkStatus?key=abc&x=2&api_key=d#f"),
            "https://h/v1/x:checkStatus?key=***&x=2&api_key=***#f"
        );
        assert_eq!(url("/not/a/url?key=1"), "/not/a/url?key=1");
        // An `@` in the path is not the authority's.
        assert_eq!(url("http://h/a:b@c"), "http://h/a:b@c");
    }

    #[test]
    fn urls_and_query_pairs_in_text_are_masked() {
        assert_eq!(
            text("warning: http://alice:s3cr3t@127.0.0.1:9/x.sym: answered 500"),
            "warning: http://alice:***@127.0.0.1:9/x.sym: answered 500"
        );
        assert_eq!(
            text("401: bad request GET /v1/x?key=AIzaSyA1 (\"key=AIzaSyA2\")"),
            "401: bad request GET /v1/x?key=*** (\"key=***\")"
        );
        // Not a credential: a monkey=banana, or `key=` inside a word.
        assert_eq!(text("monkey=banana a=b"), "monkey=banana a=b");
    }

    #[test]
    fn registered_secrets_are_replaced_in_any_text() {
        secret("tok-9f8e7d6c");
        secret("p%40ssw0rd");
        assert_eq!(text("echo tok-9f8e7d6c back"), "echo *** back");
        assert_eq!(text("user p@ssw0rd here"), "user *** here");
        assert_eq!(url_with_secrets("http://x:hunter22@h/"), "http://x:***@h/");
        assert_eq!(text("said hunter22"), "said ***");
        // Short ones are masked by their place in a URL only.
        secret("pw");
        assert_eq!(text("pwd"), "pwd");
    }
}
