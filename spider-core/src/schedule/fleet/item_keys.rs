//! The fleet's memory of item keys: a Redis hash from each key to the page that took it
//! (`P:keys`), asked by one script call per page whose items have keys.

use std::time::Duration;

use redis::Script;
use spider_settings::RedisAddress as Address;
use tokio::sync::Mutex;

use super::connection::{Connection, Redis};
use crate::error::Error;
use crate::extract::item::ItemKey;
use crate::request::canonical::Fingerprint;

/// Take each key (`ARGV[2..]`) for the page `ARGV[1]` unless another page has it; answer
/// a 1 for each key that is this page's, a 0 for another's.
const CLAIM: &str = r"
local mine = {}
for i = 2, #ARGV do
  local key = ARGV[i]
  if redis.call('HSETNX', KEYS[1], key, ARGV[1]) == 1 then
    mine[#mine + 1] = 1
  elseif redis.call('HGET', KEYS[1], key) == ARGV[1] then
    mine[#mine + 1] = 1
  else
    mine[#mine + 1] = 0
  end
end
return mine
";

/// How long a page waits for Redis to answer for its keys before its items are given
/// up as the page's failure: as long as a worker's lease lasts, a page kept past it is
/// another worker's.
const PATIENCE: Duration = Duration::from_secs(30);

/// The fleet's keys, reached from any task.
pub(crate) struct FleetKeys {
    redis: Redis,
    connection: Mutex<Option<Connection>>,
    address: Address,
    hash: String,
    script: Script,
}

impl FleetKeys {
    pub(super) fn new(redis: Redis, connection: Connection, address: Address, prefix: &str) -> Self {
        FleetKeys {
            redis,
            connection: Mutex::new(Some(connection)),
            address,
            hash: format!("{prefix}:keys"),
            script: Script::new(CLAIM),
        }
    }

    /// See [`KeptKeys::claim`](crate::schedule::item_keys::KeptKeys::claim); Redis out of reach
    /// is tried again, with a doubling pause, for [`PATIENCE`].
    pub(crate) async fn claim(&self, owner: Fingerprint, keys: &[ItemKey]) -> Result<Vec<bool>, Error> {
        // One page's own keys given twice: the first is its item's.
        let mut first = std::collections::HashSet::new();
        let distinct: Vec<bool> = keys.iter().map(|key| first.insert(*key)).collect();
        let deadline = tokio::time::Instant::now() + PATIENCE;
        let mut pause = Duration::from_millis(50);
        loop {
            match self.ask(owner, keys).await {
                Ok(mine) => {
                    return Ok(mine.into_iter().zip(distinct).map(|(mine, first)| mine && first).collect())
                }
                Err(error) if tokio::time::Instant::now() + pause > deadline => {
                    let address = self.address.to_string();
                    let problem = self.address.hide(&error.to_string());
                    let message = format!("the items' keys could not be checked: {problem}");
                    return Err(Error::Fleet { address, message });
                }
                Err(error) => {
                    tracing::debug!(target: "spiderling", %error, "the fleet's Redis did not answer for the \
                        items' keys; trying again");
                    *self.connection.lock().await = None;
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(2));
                }
            }
        }
    }

    async fn ask(&self, owner: Fingerprint, keys: &[ItemKey]) -> redis::RedisResult<Vec<bool>> {
        let mut connection = {
            let mut held = self.connection.lock().await;
            match held.as_ref() {
                Some(connection) => connection.clone(),
                None => {
                    let connection = self.redis.connect().await?;
                    *held = Some(connection.clone());
                    connection
                }
            }
        };
        let mut call = self.script.key(&self.hash);
        call.arg(owner.0.to_be_bytes().as_slice());
        for key in keys {
            call.arg(key.to_bytes().as_slice());
        }
        let mine: Vec<u8> = call.invoke_async(&mut connection).await?;
        // A key taken is an item written: on a cluster, only once a replica has it.
        connection.replicated(&self.hash).await?;
        Ok(mine.into_iter().map(|mine| mine == 1).collect())
    }
}
