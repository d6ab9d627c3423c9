//! The grammar of the proxy keys: routes, exit countries, per-host country rules, the
//! gateway's username template and prices.
//!
//! Checked twice like every key: at compile time, where a gateway URL with credentials in
//! it is refused (code ends up in version control), and at run time, where credentials
//! are welcome because they come from the environment or the command line.

/// The default gateway username template, the form most residential providers use.
pub const DEFAULT_USER_TEMPLATE: &str = "{user}-country-{geo}-session-{session}";

/// One entry of a route tier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProxyEntry {
    /// No proxy: requests leave from this machine.
    Direct,
    /// The gateway URL (or a comma-separated list of them) held in this environment variable.
    Env(String),
    /// A gateway URL written in the setting itself.
    Url(String),
}

/// Parse a proxy route: tiers from cheapest to dearest separated by `>`, each a pool of
/// entries separated by `,`: `direct`, `env:VAR`, or an `http://` / `https://` gateway URL.
/// A `,` or `>` inside a URL (a password may hold one) does not separate: only one followed
/// by the start of another entry does.
///
/// With `from_code`, a URL carrying credentials is an error: write `env:VAR` instead.
///
/// # Errors
///
/// A message saying what to write instead, which never repeats a credential.
///
/// # Examples
///
/// ```
/// use spider_settings::{parse_proxy, ProxyEntry};
///
/// let tiers = parse_proxy("direct > env:DATACENTER > env:RESIDENTIAL", true).unwrap();
/// assert_eq!(tiers[0], vec![ProxyEntry::Direct]);
/// assert_eq!(tiers[2], vec![ProxyEntry::Env("RESIDENTIAL".to_owned())]);
/// assert!(parse_proxy("http://me:hunter2@gw.example:8000", true).unwrap_err().contains("env:"));
/// ```
pub fn parse_proxy(text: &str, from_code: bool) -> Result<Vec<Vec<ProxyEntry>>, String> {
    let mut tiers = Vec::new();
    for tier in split_entries(text, '>') {
        let mut entries = Vec::new();
        for entry in split_entries(tier, ',').into_iter().map(str::trim).filter(|e| !e.is_empty()) {
            entries.push(parse_entry(entry, from_code)?);
        }
        if entries.is_empty() {
            return Err(format!(
                "`{}` has an empty tier; write `direct`, `env:VAR` or a gateway URL between each `>`",
                redact_spec(text)
            ));
        }
        if entries.len() > 1 && entries.contains(&ProxyEntry::Direct) {
            return Err(
                "`direct` is a tier of its own; separate it with `>`, as in `direct > env:PROXY`".to_owned()
            );
        }
        tiers.push(entries);
    }
    Ok(tiers)
}

/// Split `text` at each `separator` followed (after spaces) by the start of an entry, or by
/// nothing; any other `separator` belongs to the entry it is in.
pub fn split_entries(text: &str, separator: char) -> Vec<&str> {
    let starts_entry = |rest: &str| {
        let rest = rest.trim_start();
        rest.is_empty()
            || ["http://", "https://", "env:", "direct", ">"].iter().any(|p| rest.starts_with(p))
            || (separator == ',' && rest.starts_with(','))
    };
    let mut parts = Vec::new();
    let mut from = 0;
    for (at, c) in text.char_indices() {
        if c == separator && starts_entry(&text[at + 1..]) {
            parts.push(&text[from..at]);
            from = at + 1;
        }
    }
    parts.push(&text[from..]);
    parts
}

fn parse_entry(entry: &str, from_code: bool) -> Result<ProxyEntry, String> {
    if entry == "direct" {
        return Ok(ProxyEntry::Direct);
    }
    if let Some(var) = entry.strip_prefix("env:") {
        if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("`{entry}` does not name an environment variable; write `env:NAME`"));
        }
        return Ok(ProxyEntry::Env(var.to_owned()));
    }
    let Some(rest) = entry.strip_prefix("http://").or_else(|| entry.strip_prefix("https://")) else {
        return Err(format!(
            "`{}` is not a proxy route; write `direct`, `env:VAR` or an http:// gateway URL",
            redact_url(entry)
        ));
    };
    if from_code && rest.contains('@') {
        return Err(format!(
            "credentials in code end up in version control; put the gateway URL `{}` with its \
             credentials in an environment variable and write `proxy = \"env:VAR\"`",
            redact_url(entry)
        ));
    }
    if rest.rsplit('@').next().unwrap_or_default().is_empty() {
        return Err(format!("`{}` has no host", redact_url(entry)));
    }
    Ok(ProxyEntry::Url(entry.to_owned()))
}

/// A route spec with the credentials of every URL in it replaced by `***`, for printing.
///
/// # Examples
///
/// ```
/// let shown = spider_settings::redact_spec("direct > http://me:hunter2@gw.example:8000");
/// assert_eq!(shown, "direct > http://***@gw.example:8000");
/// ```
pub fn redact_spec(text: &str) -> String {
    split_entries(text, '>')
        .into_iter()
        .map(|tier| {
            split_entries(tier, ',').into_iter().map(|e| redact_url(e.trim())).collect::<Vec<_>>().join(", ")
        })
        .collect::<Vec<_>>()
        .join(" > ")
}

/// A URL with everything before its last `@` (user and password, whatever characters the
/// password holds) replaced by `***`; text without `@` is returned as it is.
pub fn redact_url(text: &str) -> String {
    let (scheme, rest) = text.split_once("://").unwrap_or(("", text));
    match rest.rfind('@') {
        Some(at) if scheme.is_empty() => format!("***{}", &rest[at..]),
        Some(at) => format!("{scheme}://***{}", &rest[at..]),
        None => text.to_owned(),
    }
}

/// Parse an exit country: two ASCII letters (ISO 3166-1 alpha-2), returned in lower
/// case as gateways expect.
///
/// # Errors
///
/// A message saying what to write instead.
///
/// # Examples
///
/// ```
/// assert_eq!(spider_settings::parse_country("DE"), Ok("de".to_owned()));
/// assert!(spider_settings::parse_country("usa").is_err());
/// ```
pub fn parse_country(text: &str) -> Result<String, String> {
    let code = text.trim();
    if code.len() == 2 && code.chars().all(|c| c.is_ascii_alphabetic()) {
        Ok(code.to_ascii_lowercase())
    } else {
        Err(format!("`{code}` is not a two-letter country code; write one such as \"us\", \"de\" or \"gb\""))
    }
}

/// Parse a per-host country rule, `PATTERN=CC`: `*.de=de` gives hosts ending in `.de`
/// the exit country `de`; a pattern without `*.` names one host.
///
/// # Errors
///
/// A message saying what to write instead.
///
/// # Examples
///
/// ```
/// assert_eq!(spider_settings::parse_geo_rule("*.de=de"), Ok(("*.de".to_owned(), "de".to_owned())));
/// assert!(spider_settings::parse_geo_rule("*.de").is_err());
/// ```
pub fn parse_geo_rule(text: &str) -> Result<(String, String), String> {
    let Some((pattern, country)) = text.split_once('=') else {
        return Err(format!("`{text}` is not a rule; write `PATTERN=COUNTRY`, such as `*.de=de`"));
    };
    let pattern = pattern.trim().to_ascii_lowercase();
    let host = pattern.strip_prefix("*.").unwrap_or(&pattern);
    if host.is_empty() || host.contains(['*', '/', ':', ' ']) {
        return Err(format!(
            "`{pattern}` is not a host pattern; write a host (`shop.example.de`) or `*.` and a suffix \
                (`*.de`)"
        ));
    }
    Ok((pattern, parse_country(country)?))
}

/// Check a gateway username template: `{user}` is required; `{geo}` and `{session}` are
/// optional, and the text before each is left out when it has no value.
///
/// # Errors
///
/// A message saying what to write instead.
///
/// # Examples
///
/// ```
/// assert!(spider_settings::check_user_template("{user}-country-{geo}-session-{session}").is_ok());
/// assert!(spider_settings::check_user_template("{user}-cc-{country}").unwrap_err().contains("{country}"));
/// ```
pub fn check_user_template(template: &str) -> Result<(), String> {
    let mut rest = template;
    let mut has_user = false;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            return Err(format!("`{template}` has a `{{` without its `}}`"));
        };
        match &rest[open..open + close + 1] {
            "{user}" => has_user = true,
            "{geo}" | "{session}" => {}
            other => {
                return Err(format!(
                    "`{other}` is not a placeholder of the username template; use {{user}}, {{geo}} and \
                        {{session}}"
                ))
            }
        }
        rest = &rest[open + close + 1..];
    }
    if has_user {
        Ok(())
    } else {
        Err(format!("`{template}` has no `{{user}}`; write it where the gateway's user name goes"))
    }
}

/// Parse a non-negative decimal number, such as a price per GB or a budget.
///
/// # Errors
///
/// A message saying what to write instead.
pub fn parse_decimal(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n >= 0.0 => Ok(n),
        _ => Err(format!("`{text}` is not a non-negative number; write one such as `8.5`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_parse_into_tiers_and_pools() {
        let tiers = parse_proxy("env:A, http://gw.example:8000 > env:B", false).unwrap();
        assert_eq!(tiers.len(), 2);
        assert_eq!(tiers[0][1], ProxyEntry::Url("http://gw.example:8000".to_owned()));
        assert!(parse_proxy("direct, env:A", false).is_err());
        assert!(parse_proxy("env:A >", false).is_err());
        assert!(parse_proxy("socks5://gw:1080", false).is_err());
        assert!(parse_proxy("env:lower-case-is-not-a-var", false).is_err());
        // Credentials are fine at run time, refused in code, and never echoed.
        let secret = "http://me:hunter2@gw.example:8000";
        assert!(parse_proxy(secret, false).is_ok());
        assert!(!parse_proxy(secret, true).unwrap_err().contains("hunter2"));
        assert!(!parse_proxy("ftp://me:hunter2@gw", false).unwrap_err().contains("hunter2"));
        assert!(parse_proxy("http://u:p/w@h:1", true).is_err(), "credentials hidden behind a /");
        // Separators inside a password do not split the entry.
        let tiers = parse_proxy("http://u:pa,ss>x@h:1, env:B > direct", false).unwrap();
        assert_eq!(tiers[0][0], ProxyEntry::Url("http://u:pa,ss>x@h:1".to_owned()));
        assert_eq!(tiers.len(), 2);
        assert_eq!(redact_spec("http://u:pa,ss>x@h:1, env:B > direct"), "http://***@h:1, env:B > direct");
    }

    #[test]
    fn redaction_hides_user_and_password_only() {
        assert_eq!(redact_url("http://u:p@h:1/x"), "http://***@h:1/x");
        assert_eq!(redact_url("http://u:p/w?x#y@h:1"), "http://***@h:1", "a password with / ? #");
        assert_eq!(
            redact_url("http://h:1/x@y"),
            "http://***@y",
            "an @ in a path: over-redacted, never leaked"
        );
        assert_eq!(redact_url("u:p@h"), "***@h");
        assert_eq!(redact_spec("env:A, http://u:p@h > direct"), "env:A, http://***@h > direct");
    }

    #[test]
    fn countries_and_rules() {
        assert!(parse_country("d").is_err());
        assert!(parse_country("1e").is_err());
        assert_eq!(parse_geo_rule(" *.CO.UK = GB "), Ok(("*.co.uk".to_owned(), "gb".to_owned())));
        assert!(parse_geo_rule("*.=de").is_err());
        assert!(parse_geo_rule("*.de=deu").is_err());
    }

    #[test]
    fn templates_and_prices() {
        assert!(check_user_template("{user}").is_ok());
        assert!(check_user_template("{geo}-{session}").is_err());
        assert!(check_user_template("{user}-{geo").is_err());
        assert_eq!(parse_decimal("8.5"), Ok(8.5));
        assert!(parse_decimal("-1").is_err());
        assert!(parse_decimal("NaN").is_err());
    }
}
