//! The command's own argument parsers, for the flags whose values the library takes
//! already split (`Options::extra_info`, `SourcePaths`' prefix map).

/// Parses an `--extra-info` argument, `KEY value`: the key is upper-cased and must be one
/// word; the value is the rest, on one line.
pub fn parse_extra_info(arg: &str) -> Result<(String, String), String> {
    let (key, value) = arg
        .trim()
        .split_once(char::is_whitespace)
        .unwrap_or((arg.trim(), ""));
    let value = value.trim();
    if key.is_empty() || value.is_empty() {
        return Err(format!("{arg:?} is not 'KEY value'"));
    }
    if arg.contains(['\n', '\r']) {
        return Err(format!("{arg:?} spans lines; an INFO record is one line"));
    }
    Ok((key.to_ascii_uppercase(), value.to_string()))
}

/// Parses a `--prefix-map` argument, `OLD=NEW` (the first `=` splits; NEW may be empty).
pub fn parse_prefix_map(arg: &str) -> Result<(String, String), String> {
    match arg.split_once('=') {
        Some((old, new)) if !old.is_empty() => Ok((old.to_string(), new.to_string())),
        _ => Err(format!("{arg:?} is not OLD=NEW with a non-empty OLD")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_maps_and_extra_info() {
        assert_eq!(parse_prefix_map("/a=").unwrap(), ("/a".into(), "".into()));
        assert_eq!(
            parse_prefix_map("/a=b=c").unwrap(),
            ("/a".into(), "b=c".into())
        );
        assert!(parse_prefix_map("=x").is_err());
        assert!(parse_prefix_map("nothing").is_err());
        assert_eq!(
            parse_extra_info(" version  1.2 3 ").unwrap(),
            ("VERSION".into(), "1.2 3".into())
        );
        assert!(parse_extra_info("KEY").is_err());
        assert!(
            parse_extra_info("KEY a\nb")
                .unwrap_err()
                .contains("spans lines")
        );
    }
}
