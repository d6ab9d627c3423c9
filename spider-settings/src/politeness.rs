//! Which hosts share one politeness budget.

/// The hosts that share one budget of `per_host` slots, pauses and a limiter's pace: those
/// of one registrable domain and those on one server address (`Server`, the default, as
/// Heritrix and Nutch can queue by address: a limit such as nginx's `limit_req` counts a
/// client's requests to every name the server holds), those of one registrable domain
/// only (`Domain`), or each host alone (`Host`), for a crawl of many sites behind one
/// address (a CDN's) whose limits are each site's own.
///
/// # Examples
///
/// ```
/// use spider_settings::Politeness;
///
/// assert_eq!(Politeness::parse("domain"), Ok(Politeness::Domain));
/// assert!(Politeness::parse("hosts").unwrap_err().contains("did you mean \"host\""));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Politeness {
    /// One budget for the hosts of a registrable domain and for those on one server
    /// address.
    #[default]
    Server,
    /// One budget for the hosts of a registrable domain (`a.example.co.uk` and
    /// `b.example.co.uk`).
    Domain,
    /// A budget for each host.
    Host,
}

impl Politeness {
    /// Every value, as written.
    pub const NAMES: [&'static str; 3] = ["server", "domain", "host"];

    /// The value `text` names.
    ///
    /// # Errors
    ///
    /// A message naming the values there are.
    pub fn parse(text: &str) -> Result<Politeness, String> {
        match text.trim() {
            "server" => Ok(Politeness::Server),
            "domain" => Ok(Politeness::Domain),
            "host" => Ok(Politeness::Host),
            other => {
                let hint = crate::keys::did_you_mean(other, &Politeness::NAMES);
                Err(format!(
                    "`{other}` is no politeness{hint}; write \"server\" (a budget for a registrable domain's \
                        hosts and for those on one server address), \"domain\" or \"host\""
                ))
            }
        }
    }

    /// The value as written.
    pub fn name(self) -> &'static str {
        match self {
            Politeness::Server => "server",
            Politeness::Domain => "domain",
            Politeness::Host => "host",
        }
    }
}
