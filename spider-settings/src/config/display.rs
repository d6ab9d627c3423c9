//! How a [`Config`] prints: the settings as `key = value`, one line for each part of the
//! crawl, as the table of keys shows them (header values and proxy credentials left out).

use super::Config;
use crate::{Stage, KEYS};

/// The parts of a crawl, in the order the lines are printed.
const STAGES: [Stage; 9] = [
    Stage::Scope,
    Stage::Admission,
    Stage::Retry,
    Stage::Fetch,
    Stage::Identity,
    Stage::Proxy,
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
                .filter_map(|key| key.show(self).map(|value| format!("{} = {value}", key.name)))
                .collect();
            if !shown.is_empty() {
                write!(f, "\n  {}", shown.join(" · "))?;
            }
        }
        Ok(())
    }
}
