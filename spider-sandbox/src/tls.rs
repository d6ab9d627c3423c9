//! The TLS mode of a sandbox: a self-signed certificate made at start, served with rustls.
//!
//! The certificate names `localhost` and `127.0.0.1`, so a client that trusts its PEM
//! (reqwest's `Certificate::from_pem`) verifies the site like any other; nothing is
//! switched off on the client side, so what a test exercises is the real TLS path.

use std::io;
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::TlsAcceptor;

/// The certificate a TLS sandbox serves, and the acceptor that serves it.
pub(crate) struct Tls {
    pub(crate) pem: String,
    pub(crate) acceptor: TlsAcceptor,
}

impl Tls {
    /// Make a fresh self-signed certificate and a server configuration for it.
    ///
    /// The ring provider is named here rather than installed process-wide, so a test
    /// binary that also builds a client with another default does not conflict.
    pub(crate) fn self_signed() -> io::Result<Tls> {
        Tls::self_signed_offering(&[b"h2", b"http/1.1"])
    }

    /// As [`self_signed`](Self::self_signed), offering these ALPN protocols, in order.
    pub(crate) fn self_signed_offering(protocols: &[&[u8]]) -> io::Result<Tls> {
        let certified =
            rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
                .map_err(io::Error::other)?;
        let pem = certified.cert.pem();
        let chain = vec![CertificateDer::from(certified.cert.der().to_vec())];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der()));
        let mut config =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(io::Error::other)?
                .with_no_client_auth()
                .with_single_cert(chain, key)
                .map_err(io::Error::other)?;
        // HTTP/2 first, as a site behind a CDN offers it; HTTP/1.1 for a client without.
        config.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
        Ok(Tls { pem, acceptor: TlsAcceptor::from(Arc::new(config)) })
    }
}
