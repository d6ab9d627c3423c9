//! Why a request got no answer, said in full and in short.
//!
//! The transport's top error only says "error sending request"; the reason (the port
//! closed, the name unknown, the certificate refused) is several sources down. A user
//! reading a log line or a failures file needs the whole chain, in one line; a summary
//! needs a few words that a thousand failures with the same root cause share, to count
//! them together.

use std::error::Error as StdError;
use std::io;

/// The root cause of a transport error, the short phrase a crawl's failures are counted
/// by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Cause {
    /// Nothing listens on the port.
    Refused,
    /// No answer within the timeout (or no connection within the connect timeout).
    TimedOut,
    /// The peer reset the connection.
    Reset,
    /// The peer closed the connection before answering.
    Closed,
    /// The host name did not resolve.
    Dns,
    /// The server's certificate is not trusted (unknown issuer, expired, wrong name).
    Certificate,
    /// The TLS handshake failed otherwise.
    Tls,
    /// Anything else on the way (a proxy tunnel refused, a malformed answer).
    Other,
}

impl Cause {
    pub(crate) const ALL: [Cause; 8] = [
        Cause::Refused,
        Cause::TimedOut,
        Cause::Reset,
        Cause::Closed,
        Cause::Dns,
        Cause::Certificate,
        Cause::Tls,
        Cause::Other,
    ];

    /// The innermost cause in `error`'s chain that says what happened.
    pub(crate) fn of(error: &(dyn StdError + 'static)) -> Cause {
        let mut found = Cause::Other;
        let mut next = Some(error);
        while let Some(error) = next {
            if let Some(cause) = Cause::of_one(error) {
                found = cause;
            }
            // An I/O error's `source` skips the error it wraps (the transport wraps a TLS
            // error in two), so that one is walked instead.
            next = match error.downcast_ref::<io::Error>().and_then(io::Error::get_ref) {
                Some(inner) => Some(inner as &(dyn StdError + 'static)),
                None => error.source(),
            };
        }
        found
    }

    /// What `error` alone says, not its sources.
    fn of_one(error: &(dyn StdError + 'static)) -> Option<Cause> {
        if let Some(io) = error.downcast_ref::<io::Error>() {
            return match io.kind() {
                io::ErrorKind::ConnectionRefused => Some(Cause::Refused),
                io::ErrorKind::TimedOut => Some(Cause::TimedOut),
                io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::BrokenPipe => Some(Cause::Reset),
                io::ErrorKind::UnexpectedEof => Some(Cause::Closed),
                // Said better by the error inside, if any.
                _ => None,
            };
        }
        if let Some(tls) = error.downcast_ref::<rustls::Error>() {
            return Some(Cause::of_tls(tls));
        }
        if let Some(hyper) = error.downcast_ref::<hyper::Error>() {
            if hyper.is_incomplete_message() {
                return Some(Cause::Closed);
            }
            if hyper.is_timeout() {
                return Some(Cause::TimedOut);
            }
            return None;
        }
        if let Some(reqwest) = error.downcast_ref::<reqwest::Error>() {
            return reqwest.is_timeout().then_some(Cause::TimedOut);
        }
        // BoringSSL's errors are not a type to match: the browser client's words tell.
        #[cfg(feature = "impersonate")]
        if let Some(wreq) = error.downcast_ref::<wreq::Error>() {
            if wreq.is_timeout() {
                return Some(Cause::TimedOut);
            }
            if wreq.is_dns() {
                return Some(Cause::Dns);
            }
            if wreq.is_tls() {
                let certificate = crate::error::cause::chain(wreq).contains("certificate verify failed");
                return Some(if certificate { Cause::Certificate } else { Cause::Tls });
            }
            return None;
        }
        // hyper-util's connector error is not a public type; its words are all there is.
        (error.to_string() == "dns error").then_some(Cause::Dns)
    }

    fn of_tls(error: &rustls::Error) -> Cause {
        match error {
            rustls::Error::InvalidCertificate(_) => Cause::Certificate,
            _ => Cause::Tls,
        }
    }

    /// The phrase failures are counted by, as in `connection refused ×12`.
    pub(crate) fn phrase(self) -> &'static str {
        match self {
            Cause::Refused => "connection refused",
            Cause::TimedOut => "timed out",
            Cause::Reset => "connection reset",
            Cause::Closed => "connection closed",
            Cause::Dns => "DNS lookup failed",
            Cause::Certificate => "TLS certificate rejected",
            Cause::Tls => "TLS handshake failed",
            Cause::Other => "connection failed",
        }
    }

    /// The reason of a request given up because its host's robots.txt could not be had
    /// for this cause.
    pub(crate) fn behind_robots(self) -> &'static str {
        match self {
            Cause::Refused => "robots.txt unavailable: connection refused",
            Cause::TimedOut => "robots.txt unavailable: timed out",
            Cause::Reset => "robots.txt unavailable: connection reset",
            Cause::Closed => "robots.txt unavailable: connection closed",
            Cause::Dns => "robots.txt unavailable: DNS lookup failed",
            Cause::Certificate => "robots.txt unavailable: TLS certificate rejected",
            Cause::Tls => "robots.txt unavailable: TLS handshake failed",
            Cause::Other => "robots.txt unavailable: connection failed",
        }
    }

    /// The reason of a request given up because its proxy gateway could not be reached
    /// for this cause: the gateway's trouble, not the site's.
    pub(crate) fn behind_proxy(self) -> &'static str {
        match self {
            Cause::Refused => "proxy unreachable: connection refused",
            Cause::TimedOut => "proxy unreachable: timed out",
            Cause::Reset => "proxy unreachable: connection reset",
            Cause::Closed => "proxy unreachable: connection closed",
            Cause::Dns => "proxy unreachable: DNS lookup failed",
            Cause::Certificate => "proxy unreachable: TLS certificate rejected",
            Cause::Tls => "proxy unreachable: TLS handshake failed",
            Cause::Other => "proxy unreachable: connection failed",
        }
    }

    /// The cause a proxy could not be reached for, read from a message that
    /// [`Error::ProxyUnreachable`](crate::Error::ProxyUnreachable) wrote (robots.txt's
    /// failures are remembered as text).
    pub(crate) fn behind_proxy_message(message: &str) -> Option<Cause> {
        Cause::ALL.into_iter().find(|cause| message.starts_with(cause.behind_proxy()))
    }

    /// Why robots.txt could not be had, as remembered: the root cause's phrase first, so
    /// that the reason survives the state file and the fleet's Redis, which keep only
    /// this text.
    pub(crate) fn robots_message(self, error: &dyn std::fmt::Display) -> String {
        format!("{}: {error}", self.phrase())
    }

    /// The cause robots.txt could not be had for, read from the message
    /// [`robots_message`](Self::robots_message) wrote; none for a status, such as
    /// `robots.txt answered 503`.
    pub(crate) fn behind_robots_message(message: &str) -> Option<Cause> {
        Cause::ALL
            .into_iter()
            .find(|cause| message.strip_prefix(cause.phrase()).is_some_and(|rest| rest.starts_with(": ")))
    }
}

/// `error` and every source under it in one line, joined by ": ", each message once (the
/// layers of an HTTP client often repeat their inner error's words, or an outer one's).
pub(crate) fn chain(error: &(dyn StdError + 'static)) -> String {
    let mut parts: Vec<String> = vec![error.to_string()];
    let mut next = error.source();
    while let Some(error) = next {
        let message = error.to_string();
        if message.is_empty() || parts.iter().any(|part| part.contains(&message)) {
            // Said already.
        } else if parts.last().is_some_and(|last| message.contains(last.as_str())) {
            // Says the last part again, and more.
            parts.pop();
            parts.push(message);
        } else {
            parts.push(message);
        }
        next = error.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{message}")]
    struct Layer {
        message: &'static str,
        #[source]
        source: Option<io::Error>,
    }

    #[test]
    fn a_chain_is_one_line_with_each_message_once() {
        let inner = io::Error::new(io::ErrorKind::ConnectionRefused, "Connection refused (os error 111)");
        let top = Layer { message: "tcp connect error", source: Some(inner) };
        assert_eq!(chain(&top), "tcp connect error: Connection refused (os error 111)");
        let repeated =
            Layer { message: "tcp connect error: Connection refused (os error 111)", source: None };
        let top = Layer { message: "tcp connect error", source: Some(io::Error::other(repeated)) };
        assert_eq!(chain(&top), "tcp connect error: Connection refused (os error 111)");
    }

    #[test]
    fn the_innermost_io_kind_names_the_cause() {
        let top =
            Layer { message: "client error (Connect)", source: Some(io::ErrorKind::ConnectionReset.into()) };
        assert_eq!(Cause::of(&top), Cause::Reset);
        let certificate = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let wrapped = io::Error::other(io::Error::new(io::ErrorKind::InvalidData, certificate));
        assert_eq!(
            Cause::of(&Layer { message: "client error (Connect)", source: Some(wrapped) }),
            Cause::Certificate
        );
        assert_eq!(
            Cause::of(&Layer { message: "dns error", source: Some(io::Error::other("no")) }),
            Cause::Dns
        );
        assert_eq!(Cause::of(&Layer { message: "odd", source: None }), Cause::Other);
    }

    #[test]
    fn a_remembered_robots_message_keeps_its_cause() {
        for cause in Cause::ALL {
            let message = cause.robots_message(&"request to http://a.example/robots.txt failed");
            assert_eq!(Cause::behind_robots_message(&message), Some(cause));
        }
        assert_eq!(Cause::behind_robots_message("robots.txt answered 503"), None);
    }
}
