//! A certificate authority of a test's own, for the servers that need certificates a
//! client checks for real (PostgreSQL's `verify-full`, Redis over TLS) and the client
//! certificates they ask for.

use std::io;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType, IsCa, KeyPair};

/// A CA made at start, self-signed.
pub(crate) struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Authority {
    pub(crate) fn new() -> io::Result<Authority> {
        let mut params = CertificateParams::new(Vec::new()).map_err(io::Error::other)?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name = named("Spiderling test CA");
        let key = KeyPair::generate().map_err(io::Error::other)?;
        Ok(Authority { issuer: CertifiedIssuer::self_signed(params, key).map_err(io::Error::other)? })
    }

    /// Its certificate, PEM, for a client to trust.
    pub(crate) fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A certificate for `names` (host names, or addresses such as `127.0.0.1`) signed by
    /// it, and its private key, both PEM.
    pub(crate) fn issue(&self, names: &[&str]) -> io::Result<(String, String)> {
        let key = KeyPair::generate().map_err(io::Error::other)?;
        let owned = names.iter().map(|name| (*name).to_owned()).collect::<Vec<_>>();
        let mut params = CertificateParams::new(owned).map_err(io::Error::other)?;
        // A subject of its own: one the same as its issuer's reads as self-signed to OpenSSL.
        params.distinguished_name = named(names.first().copied().unwrap_or("spiderling"));
        params.use_authority_key_identifier_extension = true;
        let certificate = params.signed_by(&key, &self.issuer).map_err(io::Error::other)?;
        Ok((certificate.pem(), key.serialize_pem()))
    }
}

fn named(common_name: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common_name);
    name
}
