-- One part's queues, read at once, for a worker of a crawl in parts (`parts.rs`): what is
-- queued, waiting for a retry and leased, the last request id given, the workers heard
-- from in the last 5 s, and the proxy bytes its workers reported. A script rather than a
-- transaction, so that a cluster's client follows a moved slot to its new master.
--
-- KEYS[1] the part's P:meta; ARGV[1] the part's key prefix P.

local P = ARGV[1]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
return {
  tonumber(redis.call('GET', P .. ':queued') or '0'),
  redis.call('ZCARD', P .. ':deferred'),
  redis.call('ZCARD', P .. ':leases'),
  tonumber(redis.call('GET', P .. ':seq') or '0'),
  redis.call('ZCOUNT', P .. ':heard', now - 5000000, '+inf'),
  tonumber(redis.call('HGET', P .. ':stats', 'proxy_bytes') or '0'),
}
