//! What a setting that cannot work reports.

use std::fmt;

/// Settings that cannot work: each mistake and what to write instead, several joined by
/// `; ` when [`Config::validate`](crate::Config::validate) found more than one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(String);

impl ConfigError {
    /// A mistake described by `message`.
    pub fn new(message: impl Into<String>) -> Self {
        ConfigError(message.into())
    }

    /// What is wrong, and what to write instead.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}
