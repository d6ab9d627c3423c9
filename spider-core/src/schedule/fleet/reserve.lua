-- Starts under the crawl's rate ceiling, for a crawl split in parts (`parts.rs`): its GCRA
-- bucket is in the crawl's own slot, and a worker reserves here the starts its next round
-- may give its leases, before sending the round to its part. Starts a round did not use
-- come back with the worker's next call, if no start was reserved after them.
--
-- KEYS[1] the crawl's P:tat, its next start. ARGV[1] the least time between two starts,
-- ARGV[2] how far ahead a start may be reserved, both in µs; ARGV[3] how many starts are
-- wanted; ARGV[4] and ARGV[5] the first start given back and the bucket's end after the
-- reservation it came from (0 and 0 for none). Times are Redis's clock in µs. The reply:
-- Redis's clock, the bucket's end, then each start reserved, in µs from that clock.

local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local spacing = tonumber(ARGV[1])
local horizon = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
local back_end = tonumber(ARGV[5])
if back_end > 0 and tat == back_end then
  tat = tonumber(ARGV[4])
end
local reply = { now, 0 }
while #reply - 2 < want do
  local start = math.max(now, tat)
  if start > now + horizon then
    break
  end
  table.insert(reply, start - now)
  tat = start + spacing
end
reply[2] = tat
redis.call('SET', KEYS[1], tat)
return reply
