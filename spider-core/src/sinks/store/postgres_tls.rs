//! TLS to PostgreSQL as libpq does it: `sslmode`, `sslrootcert`, `sslcert` and `sslkey`
//! from the URL (or `PGSSLMODE`, `PGSSLROOTCERT`, `PGSSLCERT`, `PGSSLKEY`), with libpq's
//! meaning for each.
//!
//! | `sslmode` | TLS | the server's certificate |
//! | --- | --- | --- |
//! | `disable` | never | - |
//! | `allow`, `prefer` (the default) | when the server offers it | not checked, unless a root certificate is there |
//! | `require` | always | not checked, unless a root certificate is there (then as `verify-ca`) |
//! | `verify-ca` | always | signed by the root certificate |
//! | `verify-full` | always | signed by it, and naming the host |
//!
//! The root certificate is `sslrootcert` (a PEM file), else `~/.postgresql/root.crt` when
//! it exists; `sslrootcert=system` is the web's roots, and then anything weaker than
//! `verify-full` is refused, as libpq refuses it. So a stock cluster (`ssl = on` with its
//! self-signed certificate), RDS and Cloud SQL all connect by default, encrypted, as
//! `psql` does; who wants the server checked says `verify-full` and names the CA.
//!
//! A client certificate (a server whose `pg_hba.conf` says `cert`, or that checks one) is
//! `sslcert` with its key `sslkey`, else `~/.postgresql/postgresql.crt` and `.key` when
//! they exist, sent whenever the server asks for one. A file named and missing, or not
//! PEM, is refused at start, where libpq would connect without it and be refused by the
//! server with less to go on. An encrypted key (`sslpassword`) is not read.
//!
//! A certificate trusted as a root and served as the server's own (a self-signed one) is
//! taken, as OpenSSL takes it; webpki, which rustls checks chains with, refuses a CA used
//! as an end entity.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::config::SslMode;

/// How much of the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    Nothing,
    /// Signed by a root: `verify-ca`.
    Chain,
    /// And naming the host: `verify-full`.
    ChainAndName,
}

/// The TLS settings of a PostgreSQL URL.
pub(super) struct PostgresTls {
    /// The URL without libpq's TLS parameters, for tokio-postgres, which knows few of them.
    pub(super) url: String,
    pub(super) mode: SslMode,
    pub(super) config: rustls::ClientConfig,
}

/// Read `sslmode` and `sslrootcert` off `url` (or the environment), as libpq would.
///
/// # Errors
///
/// A message for a mode libpq does not know, a root certificate asked for and missing or
/// not PEM, or `sslrootcert=system` with a mode weaker than `verify-full`.
pub(super) fn postgres_tls(url: &str) -> Result<PostgresTls, String> {
    let mut parsed = url::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
    let asked =
        |name: &str| parsed.query_pairs().find(|(key, _)| key == name).map(|(_, value)| value.into_owned());
    let env = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
    let mode = asked("sslmode").or_else(|| env("PGSSLMODE"));
    let rootcert = asked("sslrootcert").or_else(|| env("PGSSLROOTCERT"));
    let client_cert = asked("sslcert").or_else(|| env("PGSSLCERT"));
    let client_key = asked("sslkey").or_else(|| env("PGSSLKEY"));
    let kept: Vec<(String, String)> = parsed
        .query_pairs()
        .filter(|(key, _)| !matches!(key.as_ref(), "sslmode" | "sslrootcert" | "sslcert" | "sslkey"))
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect();
    if kept.is_empty() {
        parsed.set_query(None);
    } else {
        parsed.query_pairs_mut().clear().extend_pairs(kept);
    }
    let system = rootcert.as_deref() == Some("system");
    let mode = mode.unwrap_or_else(|| if system { "verify-full" } else { "prefer" }.to_owned());
    let (ssl_mode, check) = match mode.as_str() {
        "disable" => (SslMode::Disable, Check::Nothing),
        "allow" | "prefer" => (SslMode::Prefer, Check::Nothing),
        "require" => (SslMode::Require, Check::Nothing),
        "verify-ca" => (SslMode::Require, Check::Chain),
        "verify-full" => (SslMode::Require, Check::ChainAndName),
        other => {
            return Err(format!(
                "sslmode={other} is not one libpq knows: write disable, allow, prefer, require, verify-ca or \
                    verify-full"
            ))
        }
    };
    if system && check != Check::ChainAndName {
        return Err(format!(
            "sslrootcert=system trusts every public CA, so only sslmode=verify-full means anything with it \
                (sslmode={mode})"
        ));
    }
    let root_file = match rootcert.filter(|_| !system) {
        Some(path) => Some(PathBuf::from(path)),
        None => default_root().filter(|path| path.is_file()),
    };
    let (roots, trusted) = match (&root_file, system) {
        (_, true) => (Some(RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() }), Vec::new()),
        (Some(path), false) if ssl_mode != SslMode::Disable => {
            let (roots, trusted) = read_roots(path)?;
            (Some(roots), trusted)
        }
        _ => (None, Vec::new()),
    };
    // With a root certificate at hand, libpq checks the chain in every mode that uses TLS.
    let check = match (&roots, check) {
        (Some(_), Check::Nothing) => Check::Chain,
        (None, Check::Chain | Check::ChainAndName) => {
            return Err(format!(
                "sslmode={mode} checks the server's certificate against a root certificate, and there is \
                 none: give sslrootcert=FILE (a PEM file), put it in ~/.postgresql/root.crt, or write \
                     sslrootcert=system for the web's CAs"
            ))
        }
        (_, check) => check,
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Verifier::new(check, roots, trusted, provider.clone())?;
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier));
    let identity = match ssl_mode {
        SslMode::Disable => None,
        _ => client_identity(client_cert, client_key)?,
    };
    let config = match identity {
        Some((chain, key)) => {
            builder.with_client_auth_cert(chain, key).map_err(|e| format!("sslcert and sslkey: {e}"))?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(PostgresTls { url: parsed.to_string(), mode: ssl_mode, config })
}

/// The client certificate and its key: those named, else libpq's default files when the
/// certificate's is there. A key without its certificate is no identity, as in libpq.
fn client_identity(
    cert: Option<String>,
    key: Option<String>,
) -> Result<Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>, String> {
    let home = std::env::var_os("HOME").map(|home| Path::new(&home).join(".postgresql"));
    let cert = match cert {
        Some(path) => PathBuf::from(path),
        None => match home.as_ref().map(|dir| dir.join("postgresql.crt")).filter(|path| path.is_file()) {
            Some(path) => path,
            None => return Ok(None),
        },
    };
    let key = key.map(PathBuf::from).unwrap_or_else(|| {
        home.map_or_else(|| PathBuf::from("postgresql.key"), |dir| dir.join("postgresql.key"))
    });
    let chain = CertificateDer::pem_file_iter(&cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("sslcert {}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!("sslcert {} holds no BEGIN CERTIFICATE block", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(&key)
        .map_err(|e| format!("sslkey {}: {e} (an unencrypted PEM key: PKCS#8, RSA or EC)", key.display()))?;
    Ok(Some((chain, key)))
}

/// libpq's default root certificate: `~/.postgresql/root.crt`.
fn default_root() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|home| Path::new(&home).join(".postgresql/root.crt"))
}

/// The roots of the PEM file at `path`, and each certificate's bytes.
fn read_roots(path: &Path) -> Result<(RootCertStore, Vec<Vec<u8>>), String> {
    let pem = std::fs::read(path).map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
    let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("sslrootcert {} is not PEM: {e}", path.display()))?;
    if certificates.is_empty() {
        return Err(format!("sslrootcert {} holds no BEGIN CERTIFICATE block", path.display()));
    }
    let trusted = certificates.iter().map(|certificate| certificate.to_vec()).collect();
    let mut roots = RootCertStore::empty();
    let (_, refused) = roots.add_parsable_certificates(certificates);
    if roots.is_empty() {
        return Err(format!(
            "sslrootcert {}: none of its {refused} certificates can be a root",
            path.display()
        ));
    }
    Ok((roots, trusted))
}

/// The check of the server's certificate that `sslmode` asks for; the handshake's own
/// signatures are always checked.
#[derive(Debug)]
struct Verifier {
    check: Check,
    /// The roots as webpki checks chains against them, and their certificates as given.
    webpki: Option<Arc<WebPkiServerVerifier>>,
    trusted: Vec<Vec<u8>>,
    provider: Arc<CryptoProvider>,
}

impl Verifier {
    fn new(
        check: Check,
        roots: Option<RootCertStore>,
        trusted: Vec<Vec<u8>>,
        provider: Arc<CryptoProvider>,
    ) -> Result<Verifier, String> {
        let webpki = match roots {
            Some(roots) => Some(
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()
                    .map_err(|e| format!("TLS roots: {e}"))?,
            ),
            None => None,
        };
        Ok(Verifier { check, webpki, trusted, provider })
    }
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(webpki) = self.webpki.as_ref().filter(|_| self.check != Check::Nothing) else {
            return Ok(ServerCertVerified::assertion());
        };
        // A self-signed certificate trusted as it is: the chain is the root itself.
        if self.trusted.iter().any(|root| root.as_slice() == end_entity.as_ref()) {
            if self.check == Check::ChainAndName {
                let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
                rustls::client::verify_server_name(&parsed, server_name)?;
            }
            return Ok(ServerCertVerified::assertion());
        }
        match webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if self.check == Check::Chain => Ok(ServerCertVerified::assertion()),
            verified => verified,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}
