//! How a [`Config`] prints: the settings as `key = value`, one line for each part of the
//! crawl, as the table of keys shows them (header values and proxy credentials left out).
//! Its `Debug` shows the same values, so that no way of printing a config shows a secret.

use super::Config;
use crate::{Stage, KEYS};

/// The parts of a crawl, in the order the lines are printed.
const STAGES: [Stage; 10] = [
    Stage::Scope,
    Stage::Admission,
    Stage::Retry,
    Stage::Fetch,
    Stage::Identity,
    Stage::Proxy,
    Stage::Render,
    Stage::Parse,
    Stage::Store,
    Stage::Run,
];

/// The settings as `key = value` lines, for the start of a run.
impl std::fmt::Display for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "settings of {}:", self.name)?;
        for stage in STAGES {
            let shown: Vec<String> = KEYS
                .iter()
                .filter(|key| key.stage == stage)
                .filter_map(|key| {
                    let value = key.show(self)?;
                    // In a fleet, some limits are every worker's together: said where a
                    // worker's user would read them as its own.
                    let fleet =
                        self.frontier.is_some() && super::FLEET_WIDE.contains(&key.name) && value != "none";
                    Some(format!("{} = {value}{}", key.name, if fleet { " for the whole fleet" } else { "" }))
                })
                .collect();
            if !shown.is_empty() {
                write!(f, "\n  {}", shown.join(" · "))?;
            }
        }
        Ok(())
    }
}

/// The keys as the settings show them, and the seed cookies by count: a derived `Debug`
/// would print header values and a Redis password.
impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut fields = f.debug_struct("Config");
        fields.field("name", &self.name);
        for key in KEYS {
            if let Some(value) = key.show(self) {
                fields.field(key.name, &value);
            }
        }
        fields.field("seed_cookies", &self.seed_cookies).finish_non_exhaustive()
    }
}
