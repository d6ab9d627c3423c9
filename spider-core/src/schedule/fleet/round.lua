-- One round between a worker and the fleet's Redis: what the worker did since its last
-- round, then new leases for it. Redis runs one script at a time, so each round is atomic
-- against every other worker's: a request is leased by one worker only, and the limits
-- (one GCRA bucket for the crawl, one per host, one count of busy slots per host) are
-- read and moved in the same step as the leases they allow.
--
-- KEYS[1] the part's P:meta, named only so that a cluster sends the call to the master of
-- the part's slot (every key below is in it: P is `spiderling:{CRAWL}` for a crawl of one
-- part, else `spiderling:{CRAWL/N}`, a hash tag; `parts.rs`). In a crawl in parts, `done`
-- and the rate bucket `tat` are the crawl's own, in its slot, not the part's.
-- ARGV[1] the crawl's key prefix, ARGV[2] the worker's id, ARGV[3] the round as JSON (see
-- `messages.rs`, `Round`), then the requests it enqueues, one argument each: a request is
-- JSON that this script stores and hands out without decoding (only its URL's host is
-- read off), so it travels outside the round's JSON, neither escaped by the worker nor
-- decoded here. The reply is JSON too, then a line for each request leased. The worker
-- sends durations in milliseconds and gets offsets back in milliseconds, so no two clocks
-- are compared. Inside, times are Redis's own clock in whole microseconds: a score with a
-- fraction costs Redis several times more to format and parse than a whole number, and a
-- round writes dozens of them.
--
-- Keys under the prefix P:
--   P:meta      hash   the spider that made the crawl; `broken`: why a worker found that
--                      Redis lost part of the crawl
--   P:epoch     string rounds run on the crawl, one more with every round
--   P:seq       string the last request id given
--   P:seen:B    string the seen-set, in 65,536 buckets B (the first 16 bits of the
--                      fingerprint, 4 hex digits): the fingerprint's next 64 bits, 8
--                      bytes each, end to end. About 12 bytes of Redis memory a URL, where
--                      a set of hex fingerprints took 80; two URLs are taken for one when
--                      80 bits of their fingerprints agree (1 in 10^24 a pair)
--   P:req:N     hash   id -> "PRIORITY\nREQUEST" (the request as the worker wrote it; its
--                      host read off its URL), or "PRIORITY HOST\nREQUEST" for a request
--                      whose URL does not give its host key, for the ids from 128 N to
--                      128 N + 127: a hash that small, of values under 64 bytes, is one
--                      listpack in Redis, about the record's length an entry, where one
--                      hash of every request cost some 60 bytes more each
--   P:q:HOST    zset   the host's queue: id by priority, then id (first in, first out)
--   P:ready     zset   hosts with something queued, by the earliest they may start one
--   P:queued    string requests queued, all hosts
--   P:leases    zset   "ID WORKER" -> when the lease of ID by WORKER runs out
--   P:mine:W    set    the ids worker W holds
--   P:slots:HOST zset  the host's busy slots: id -> until when (its lease's end while in
--                      flight, its politeness pause's end once finished)
--   P:heard     zset   worker -> its last round: a host's slots are shared over the
--                      workers heard from in the last 5 s; one not heard from for
--                      `dead_ms` is dead, and its leases are taken back before their end
--   P:limit:HOST hash  limit (slots, when not per_host), tat (no start before: a 429's hold);
--                      with adaptive mode, the fleet's alimit (slots) and arps (requests a
--                      second) for the host, ahold (no raise before: a cut's hold), atat
--                      (the host's next start under arps); `held:W`, the host's requests
--                      worker W holds (its share is the host's slots over the workers
--                      alive), here and not in a hash of its own so that the leasing reads
--                      it with the limits, in one call
--   P:tat       string the crawl's next start under rpm/rps
--   P:deferred  zset   id -> when its retry is due
--   P:robots:HOST string robots.txt's answer; P:claim:HOST who is fetching it
--   P:round:W   string worker W's last round number, a newline, and the reply it got
--   P:known:W   set    hosts whose robots.txt answer worker W was given
--   P:failures  list   requests given up (JSON lines)
--   P:outputs   hash   "HOST:PATH" -> {bytes, items, worker, at_ms}: how much of each
--                      worker's output is committed with the requests it finished
--   P:gaps      hash   "HOST:PATH" -> [[from, to, items], ...]: stretches of that output
--                      whose round was void and which its worker could not cut out,
--                      left out of what is committed
--   P:stats     hash   the fleet's totals
--   P:workers   hash   worker -> its last heartbeat (JSON)
--   P:answers:SECOND hash  answers (a) and blocks (b) in that second, in all and per
--                      host ("HOST a", "HOST b"), for every worker's block-rate gauge
--   P:refusing  set    hosts that refused a worker's own client (`impersonate = "auto"`)
--   P:done      string set when the last worker found nothing left

local P = ARGV[1]
local worker = ARGV[2]
local r = cjson.decode(ARGV[3])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local lease = r.lease_ms * 1000

-- Milliseconds from the worker as whole microseconds.
local function us(ms)
  return math.floor(ms * 1000)
end

-- A visit: a worker's changes to the hosts of a part of the crawl it does not lease
-- from (links it found, robots.txt answers it fetched, a host's pause or limits), and
-- nothing else: no round number, no lease, no sweep, and the worker not counted as one
-- of the part's.
local visit = r.visit

-- A key of the crawl: P:name, or P:name:part. Built without a table: a round builds
-- dozens.
local function key(name, part)
  if part then
    return P .. ':' .. name .. ':' .. part
  end
  return P .. ':' .. name
end

-- Priority first (higher first), then the order queued; requests given back go first
-- within their priority.
local function score(priority, id)
  return -priority * 4294967296 + id
end

-- The host key of a request as the worker makes it (`host_key`: scheme://host:port, the
-- port given or the scheme's own), read off its URL: a plain GET is "DEPTH URL", any other
-- JSON that starts with it (`messages.rs`). Nil when the URL does not tell it.
local default_ports = { http = '80', https = '443', ws = '80', wss = '443' }
local function host_of(request)
  local url = string.match(request, '^%d+ (%S+)$') or string.match(request, '^{"u":"([^"]*)"')
  if not url then
    return nil
  end
  local scheme, authority = string.match(url, '^(%l[%l%d+.-]*)://([^/?#]*)')
  if not scheme then
    return nil
  end
  authority = string.match(authority, '[^@]*$')
  local host, port = string.match(authority, '^(%[[^%]]*%]):?(%d*)$')
  if not host then
    host, port = string.match(authority, '^([^:]*):?(%d*)$')
  end
  if not host or host == '' then
    return nil
  end
  if port == '' then
    port = default_ports[scheme]
  end
  if not port then
    return nil
  end
  return scheme .. '://' .. host .. ':' .. port
end

-- A request's record: its priority, its host only when its URL does not tell it (the
-- host, some 20 to 30 bytes, was a fifth of a record), and the request.
local function record(priority, host, request)
  if host_of(request) == host then
    return priority .. '\n' .. request
  end
  return priority .. ' ' .. host .. '\n' .. request
end

-- The hash that holds the record of id.
local function req(id)
  return key('req', math.floor(tonumber(id) / 128))
end

-- One call of a command over many members: `cmd key a b c ...`, a thousand at a time
-- (Lua's unpack has a limit; a list of pairs stays whole, as 1000 is even).
local function each(cmd, k, members)
  for i = 1, #members, 1000 do
    redis.call(cmd, k, unpack(members, i, math.min(i + 999, #members)))
  end
end

-- Read a record: its host, priority and request.
local function read_record(v)
  local line = string.find(v, '\n', 1, true)
  local head = string.sub(v, 1, line - 1)
  local request = string.sub(v, line + 1)
  local space = string.find(head, ' ', 1, true)
  if space then
    return string.sub(head, space + 1), tonumber(string.sub(head, 1, space - 1)), request
  end
  return host_of(request), tonumber(head), request
end

-- The host, priority and request of id; nil when it is gone.
local function where(id)
  local v = redis.call('HGET', req(id), id)
  if not v then
    return nil, nil, nil
  end
  return read_record(v)
end

-- The records of ids (false for one gone), one HMGET per hash they are in.
local function records(ids)
  local by_hash = {}
  local order = {}
  for i, id in ipairs(ids) do
    local h = req(id)
    if not by_hash[h] then
      by_hash[h] = {}
      table.insert(order, h)
    end
    table.insert(by_hash[h], i)
  end
  local found = {}
  for _, h in ipairs(order) do
    local at = by_hash[h]
    for start = 1, #at, 1000 do
      local fields = {}
      for j = start, math.min(start + 999, #at) do
        table.insert(fields, ids[at[j]])
      end
      local values = redis.call('HMGET', h, unpack(fields))
      for j, v in ipairs(values) do
        found[at[start + j - 1]] = v
      end
    end
  end
  return found
end

-- Delete the records of ids, one HDEL per hash they are in.
local function forget_records(ids)
  local by_hash = {}
  for _, id in ipairs(ids) do
    local h = req(id)
    by_hash[h] = by_hash[h] or {}
    table.insert(by_hash[h], id)
  end
  for h, fields in pairs(by_hash) do
    each('HDEL', h, fields)
  end
end

-- The member of P:leases for id held by this worker.
local function leased_by_me(id)
  return id .. ' ' .. worker
end

-- Leases this round ended, and hosts whose slots it freed (the worker's count of each
-- host's requests, when the host may start one again): written by settle().
local ended = {}
local freed = {}

-- Requests queued by this round, and their hosts: readied once per host by publish(), and
-- counted, less those the round leases, at its end.
local added = 0
local readied = {}

local function queue(host, id, s)
  redis.call('ZADD', key('q', host), s, id)
  added = added + 1
  readied[host] = true
end

local function publish()
  for host in pairs(readied) do
    -- LT: an earlier start than the host's current one wins; a new host is added.
    redis.call('ZADD', key('ready'), 'LT', now, host)
  end
end

-- End this worker's leases of many requests at once, each {id, free_at, known_host}: its
-- host's slot stays busy until free_at. For each, its host, priority and request, or {}
-- when the lease is not this worker's (it ran out and went to another). A finished
-- request's host comes with it (`known_host`): its record is not read, only deleted.
-- Redis is asked once for which leases are this worker's (unless `mine` says, from
-- `ours`), once per hash for the records, and once per host for its slots.
local function ours(ids)
  local mine = {}
  for start = 1, #ids, 1000 do
    local answers = redis.call('SMISMEMBER', key('mine', worker), unpack(ids, start, math.min(start + 999, #ids)))
    for j, answer in ipairs(answers) do
      mine[start + j - 1] = answer == 1
    end
  end
  return mine
end

local function end_leases(ends, mine)
  local results = {}
  if not mine then
    local ids = {}
    for i, e in ipairs(ends) do
      ids[i] = e[1]
    end
    mine = ours(ids)
  end
  local unknown = {}
  local unknown_ids = {}
  for i, e in ipairs(ends) do
    if mine[i] and not e[3] then
      table.insert(unknown, i)
      table.insert(unknown_ids, e[1])
    end
  end
  local read = {}
  for j, v in ipairs(records(unknown_ids)) do
    read[unknown[j]] = v
  end
  local busy = {}
  local free = {}
  for i, e in ipairs(ends) do
    local result = {}
    if mine[i] then
      table.insert(ended, e[1])
      local host, priority, request = e[3], nil, nil
      if not host and read[i] then
        host, priority, request = read_record(read[i])
      end
      if host then
        local free_at = e[2]
        if free_at > now then
          busy[host] = busy[host] or {}
          table.insert(busy[host], free_at)
          table.insert(busy[host], e[1])
        else
          free[host] = free[host] or {}
          table.insert(free[host], e[1])
        end
        local f = freed[host]
        if f then
          f.count = f.count + 1
          f.at = math.min(f.at, math.max(free_at, now))
        else
          freed[host] = { count = 1, at = math.max(free_at, now) }
        end
        result = { host, priority, request }
      end
    end
    results[i] = result
  end
  for host, members in pairs(busy) do
    each('ZADD', key('slots', host), members)
  end
  for host, members in pairs(free) do
    each('ZREM', key('slots', host), members)
  end
  return results
end

local function settle()
  local members = {}
  for i, id in ipairs(ended) do
    members[i] = leased_by_me(id)
  end
  each('ZREM', key('leases'), members)
  each('SREM', key('mine', worker), ended)
  ended = {}
  for host, f in pairs(freed) do
    redis.call('HINCRBY', key('limit', host), 'held:' .. worker, -f.count)
    if redis.call('EXISTS', key('q', host)) == 1 then
      redis.call('ZADD', key('ready'), 'LT', f.at, host)
    end
  end
  freed = {}
end

local duplicates = 0
local reaped = 0

-- Add fingerprints (20 hex digits each, their first 80 bits) to the seen-set: whether
-- each was new. The buckets they fall in are read in one MGET and searched (a match
-- counting only at a multiple of 8), and each grows by one APPEND.
local function first_sights(prints)
  local names = {}
  local slot = {}
  local members = {}
  for i, print in ipairs(prints) do
    local bucket = string.sub(print, 1, 4)
    if not slot[bucket] then
      table.insert(names, key('seen', bucket))
      slot[bucket] = #names
    end
    members[i] = (string.gsub(string.sub(print, 5, 20), '%x%x', function(cc)
      return string.char(tonumber(cc, 16))
    end))
  end
  local held = {}
  for start = 1, #names, 1000 do
    local values = redis.call('MGET', unpack(names, start, math.min(start + 999, #names)))
    for j, v in ipairs(values) do
      held[start + j - 1] = v or ''
    end
  end
  local grown = {}
  local new = {}
  for i, print in ipairs(prints) do
    local b = slot[string.sub(print, 1, 4)]
    local member = members[i]
    local at = string.find(held[b], member, 1, true)
    while at and at % 8 ~= 1 do
      at = string.find(held[b], member, at + 1, true)
    end
    new[i] = not at
    if new[i] then
      -- Seen by a later print of this round too.
      held[b] = held[b] .. member
      grown[b] = (grown[b] or '') .. member
    end
  end
  for b, bytes in pairs(grown) do
    redis.call('APPEND', names[b], bytes)
  end
  return new
end

local epoch = 0
if not visit then
  -- A round sent again after its reply was lost: answered as the first time, not applied
  -- twice.
  local last = redis.call('GET', key('round', worker))
  if last then
    local line = string.find(last, '\n', 1, true)
    if tonumber(string.sub(last, 1, line - 1)) == r.number then
      return string.sub(last, line + 1)
    end
  end

  -- One more round on the crawl: a worker answered a number no higher than one it was
  -- answered before knows that Redis lost writes (restored from an older snapshot, or
  -- restarted empty and seeded again), whatever the keys left look like.
  epoch = redis.call('INCR', key('epoch'))
end

-- Leave the stretch [from, to) of output `file`, holding `items` items, out of what is
-- committed.
local function add_gap(file, from, to, items)
  local gaps = cjson.decode(redis.call('HGET', key('gaps'), file) or '[]')
  table.insert(gaps, { from, to, items })
  redis.call('HSET', key('gaps'), file, cjson.encode(gaps))
end

-- The stretch of the worker's output that this round commits holds the items of every
-- request it finishes. When one of them is no longer this worker's (its lease ran out
-- while the round could not reach Redis, and another worker leased it), that request's
-- items will be written again elsewhere, and the stretch cannot count as it is: the
-- round is void. The requests it finished that were still this worker's are queued
-- again instead, for their items to be written once more, and counted, by whoever leases
-- them next. Its stretch is cut: the output stays committed as it was before it, and the
-- worker takes the stretch out of its file before it commits more (`cut` in the reply),
-- or, if it cannot (it has stopped), tells it as a gap the fleet's count and merge leave
-- out (`r.gap`). A stretch at the file's start is a gap at once: a CSV header or a JSON
-- array's opening bracket is in it, which what follows does not repeat.
local void = 0
local cut = false
local mine = nil
if r.output and #r.finish > 0 then
  local ids = {}
  for i, f in ipairs(r.finish) do
    ids[i] = f[1]
  end
  mine = ours(ids)
  -- An id ended twice: the second end was of a lease the first one already ended.
  local once = {}
  for i, id in ipairs(ids) do
    if not mine[i] or once[id] then
      void = #ids
      break
    end
    once[id] = true
  end
end

-- [id, pause ms, host]
local ends = {}
if void > 0 then
  for i, f in ipairs(r.finish) do
    -- No host: the record is read, for the request to be queued again.
    ends[i] = { f[1], now + us(f[2]) }
  end
  for i, ended_here in ipairs(end_leases(ends, mine)) do
    local host, priority = ended_here[1], ended_here[2]
    if host then
      queue(host, r.finish[i][1], score(priority, 0))
    end
  end
  if r.output[5] > 0 then
    cut = true
  else
    add_gap(r.output[1], r.output[4], r.output[2], r.output[3] - r.output[5])
  end
else
  for i, f in ipairs(r.finish) do
    ends[i] = { f[1], now + us(f[2]), f[3] }
  end
  local finished = {}
  for i, ended_here in ipairs(end_leases(ends, mine)) do
    if ended_here[1] then
      table.insert(finished, r.finish[i][1])
    end
  end
  forget_records(finished)
end

-- [id, due in ms, request, pause ms]
ends = {}
for i, d in ipairs(r.defer) do
  ends[i] = { d[1], now + us(d[4]) }
end
for i, ended_here in ipairs(end_leases(ends)) do
  local d = r.defer[i]
  local host, priority = ended_here[1], ended_here[2]
  if host then
    redis.call('HSET', req(d[1]), d[1], record(priority, host, d[3]))
    redis.call('ZADD', key('deferred'), now + us(d[2]), d[1])
  end
end

-- [id]: leased but never sent; back to the front of its priority.
ends = {}
for i, g in ipairs(r.give_back) do
  ends[i] = { g[1], now }
end
for i, ended_here in ipairs(end_leases(ends)) do
  local host, priority = ended_here[1], ended_here[2]
  if host then
    queue(host, r.give_back[i][1], score(priority, 0))
  end
end

-- [file, from, to, items]: a void round's stretch its worker could not cut after all.
if r.gap then
  add_gap(r.gap[1], r.gap[2], r.gap[3], r.gap[4])
end

if r.output then
  -- In the same step as the ends of the requests whose items it holds.
  local bytes, items = r.output[2], r.output[3]
  if cut then
    bytes, items = r.output[4], r.output[5]
  end
  redis.call('HSET', key('outputs'), r.output[1], cjson.encode({
    bytes = bytes, items = items, worker = worker, at_ms = math.floor(now / 1000) }))
end

if r.ending then
  settle()
  -- Whatever the stopping worker still holds goes back, also leases it never learnt of.
  local held = redis.call('SMEMBERS', key('mine', worker))
  ends = {}
  for i, id in ipairs(held) do
    ends[i] = { id, now }
  end
  for i, ended_here in ipairs(end_leases(ends)) do
    local host, priority = ended_here[1], ended_here[2]
    if host then
      queue(host, held[i], score(priority, 0))
    end
  end
end

settle()

-- [fingerprint, host, priority]; the request is the argument after the round's. The new
-- ones take their ids in one INCRBY, their records one HSET per hash and their places one
-- ZADD per host.
local prints = {}
for i, e in ipairs(r.enqueue) do
  prints[i] = e[1]
end
local new = first_sights(prints)
local fresh = {}
for i in ipairs(r.enqueue) do
  if new[i] then
    table.insert(fresh, i)
  end
end
duplicates = #r.enqueue - #fresh
if #fresh > 0 then
  local id = redis.call('INCRBY', key('seq'), #fresh) - #fresh
  local by_hash = {}
  local by_host = {}
  for _, i in ipairs(fresh) do
    id = id + 1
    local e = r.enqueue[i]
    local h = req(id)
    by_hash[h] = by_hash[h] or {}
    table.insert(by_hash[h], id)
    table.insert(by_hash[h], record(e[3], e[2], ARGV[3 + i]))
    by_host[e[2]] = by_host[e[2]] or {}
    table.insert(by_host[e[2]], score(e[3], id))
    table.insert(by_host[e[2]], id)
  end
  for h, fields in pairs(by_hash) do
    each('HSET', h, fields)
  end
  for host, members in pairs(by_host) do
    each('ZADD', key('q', host), members)
    readied[host] = true
  end
  added = added + #fresh
  redis.call('HINCRBY', key('stats'), 'seen', #fresh)
end
if duplicates > 0 then
  redis.call('HINCRBY', key('stats'), 'duplicates', duplicates)
end

for _, b in ipairs(r.robots) do
  -- [host, answer, slots or 0]: a Crawl-delay makes the host one slot for the fleet.
  -- Kept for the crawl: a worker that knows a host's rules does not fetch them again.
  redis.call('SET', key('robots', b[1]), b[2])
  redis.call('DEL', key('claim', b[1]))
  if b[3] > 0 then
    redis.call('HSET', key('limit', b[1]), 'limit', b[3])
  end
  redis.call('SADD', key('known', worker), b[1])
  if redis.call('EXISTS', key('q', b[1])) == 1 then
    redis.call('ZADD', key('ready'), now, b[1])
  end
end

for _, h in ipairs(r.pause) do
  -- [host, ms]: a 429 holds the host back for every worker.
  local tat = tonumber(redis.call('HGET', key('limit', h[1]), 'tat') or '0')
  redis.call('HSET', key('limit', h[1]), 'tat', math.max(tat, now + us(h[2])))
end

for _, host in ipairs(r.refusing) do
  -- A host that refused a worker's own client: every worker's new identities there wear
  -- a browser's wire.
  redis.call('SADD', key('refusing'), host)
end

for _, a in ipairs(r.adapt) do
  -- [host, slots, rps, proposal]: adaptive mode's limits of a host, for every worker. A
  -- cut is taken at once and held; a raise after the hold; a host's first limits only
  -- when the fleet has none.
  local k = key('limit', a[1])
  local now_limits = redis.call('HMGET', k, 'alimit', 'arps', 'ahold')
  local slots, rps = tonumber(now_limits[1]), tonumber(now_limits[2])
  if a[4] == 2 then
    redis.call('HSET', k, 'alimit', math.min(slots or a[2], a[2]), 'arps', math.min(rps or a[3], a[3]),
      'ahold', now + us(r.adapt_hold_ms))
  elseif a[4] == 1 then
    if now >= (tonumber(now_limits[3]) or 0) then
      redis.call('HSET', k, 'alimit', math.max(slots or 0, a[2]), 'arps', math.max(rps or 0, a[3]))
    end
  elseif not slots then
    redis.call('HSET', k, 'alimit', a[2], 'arps', a[3])
  end
end

-- Answers per second, crawl-wide and per host, for the gauges' window.
local second = math.floor(now / 1000000)
for _, a in ipairs(r.answers) do
  -- [host, answered, blocked]
  local k = key('answers', second)
  redis.call('HINCRBY', k, 'a', a[2])
  redis.call('HINCRBY', k, 'b', a[3])
  redis.call('HINCRBY', k, a[1] .. ' a', a[2])
  redis.call('HINCRBY', k, a[1] .. ' b', a[3])
  redis.call('EXPIRE', k, 120)
end

-- A void round's requests given up are tried again, and given up there if so.
if void == 0 then
  for _, line in ipairs(r.failures) do
    redis.call('RPUSH', key('failures'), line)
  end
end

for name, n in pairs(r.stats) do
  redis.call('HINCRBY', key('stats'), name, n)
end

if r.renew then
  for _, id in ipairs(redis.call('SMEMBERS', key('mine', worker))) do
    redis.call('ZADD', key('leases'), 'XX', now + lease, leased_by_me(id))
    local host = where(id)
    if host then
      redis.call('ZADD', key('slots', host), 'XX', 'GT', now + lease, id)
    end
  end
end

-- Take owner's request id back, to the front of its queue.
local function take_back(id, owner)
  redis.call('ZREM', key('leases'), id .. ' ' .. owner)
  redis.call('SREM', key('mine', owner), id)
  local host, priority = where(id)
  if host then
    redis.call('HINCRBY', key('limit', host), 'held:' .. owner, -1)
    redis.call('ZREM', key('slots', host), id)
    queue(host, id, score(priority, 0))
    reaped = reaped + 1
  end
end

-- The sweep (leases run out, workers dead, retries due) runs in a round that finished
-- nothing (a worker waiting for work, or starting), a heartbeat, a last round, and every
-- fourth round of the crawl: a busy round skips its three scans, and what they find waits
-- a few rounds at most, milliseconds while workers are busy.
local sweep = not visit and (#r.finish == 0 or r.beat or r.ending or epoch % 4 == 0)

-- Leases that ran out.
if sweep then
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', key('leases'), '-inf', now, 'LIMIT', 0, 256)) do
    local id, owner = string.match(member, '^(%d+) (.*)$')
    take_back(id, owner)
  end
end

-- Workers not heard from for dead_ms (killed, or cut off from Redis): every request they
-- hold goes back to the front of its queue now, not when its lease ends. One that was
-- only paused finds, once it goes on, that it was not heard from, and drops what it held.
if r.ending then
  redis.call('ZREM', key('heard'), worker)
elseif not visit then
  redis.call('ZADD', key('heard'), now, worker)
end
if sweep then
  for _, dead in ipairs(redis.call('ZRANGEBYSCORE', key('heard'), '-inf', now - us(r.dead_ms), 'LIMIT', 0, 16)) do
    for _, id in ipairs(redis.call('SMEMBERS', key('mine', dead))) do
      take_back(id, dead)
    end
    redis.call('ZREM', key('heard'), dead)
  end

  -- Retries due.
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', key('deferred'), '-inf', now, 'LIMIT', 0, 256)) do
    redis.call('ZREM', key('deferred'), id)
    local host, priority = where(id)
    if host then
      queue(host, id, score(priority, tonumber(id)))
    end
  end
end

publish()

-- New leases, from the hosts that may start a request now, within the limits.
local leased = {}
local requests = {}
local claims = {}
local answers = {}
local want = r.want
-- Workers heard from in the last 5 s share each host's slots: one worker that finishes
-- and asks again in the same round must not keep a slot from the others for ever. Counted
-- at the first host that may start one, so a round that finds none does not count them.
local alive = nil
-- Rounded up: the crawl never goes faster than its ceiling.
local gspacing = math.ceil(r.spacing_ms * 1000)
local gtat = 0
if gspacing > 0 then
  gtat = tonumber(redis.call('GET', key('tat')) or '0')
end
-- A crawl split in parts keeps its GCRA bucket in the crawl's own slot: the worker
-- reserved these starts there (ms from then, in order), and each lease or claim of the
-- round takes the next one as it is, or none. Those left are given back by the worker.
local tokens = r.tokens
local used = 0
local function next_token()
  local t = tokens[used + 1]
  return t and now + us(t)
end
-- The leases of every host, written once at the end.
local owned = {}
local owned_ids = {}
local horizon = us(r.horizon_ms)
if want > 0 then
  for _, host in ipairs(redis.call('ZRANGEBYSCORE', key('ready'), '-inf', now + horizon, 'LIMIT', 0, 64)) do
    if want <= 0 then
      break
    end
    local open = true
    if r.obey_robots then
      if redis.call('EXISTS', key('robots', host)) == 0 then
        open = false
        -- One worker fetches it for the fleet, with a token of the crawl's rate: at the
        -- start it is given, like a lease.
        local start = math.max(now, gtat)
        if tokens then
          start = next_token() or math.huge
        end
        if start <= now + horizon and redis.call('SET', key('claim', host), worker, 'NX', 'PX', r.lease_ms) then
          if gspacing > 0 then
            gtat = start + gspacing
          end
          if tokens then
            used = used + 1
          end
          table.insert(claims, { host, (start - now) / 1000 })
          want = want - 1
        end
        redis.call('ZADD', key('ready'), now + 200000, host)
      elseif redis.call('SISMEMBER', key('known', worker), host) == 0 then
        answers[host] = redis.call('GET', key('robots', host))
        redis.call('SADD', key('known', worker), host)
      end
    end
    if open then
      local l = redis.call('HMGET', key('limit', host), 'limit', 'tat', 'alimit', 'arps', 'atat', 'held:' .. worker)
      local limit = math.min(tonumber(l[1]) or r.per_host, tonumber(l[3]) or r.per_host)
      local htat = tonumber(l[2]) or 0
      -- Adaptive mode's rate for the host, for the whole fleet.
      local aspacing = l[4] and math.ceil(1000000 / tonumber(l[4]))
      local atat = tonumber(l[5]) or 0
      redis.call('ZREMRANGEBYSCORE', key('slots', host), '-inf', now)
      local busy = redis.call('ZCARD', key('slots', host))
      alive = alive or math.max(1, redis.call('ZCOUNT', key('heard'), now - 5000000, '+inf'))
      local share = math.ceil(limit / alive)
      local held = tonumber(l[6]) or 0
      local ids = {}
      local later = nil
      -- The starts the limits allow, then as many requests popped in one call.
      local starts = {}
      local gtat_before, atat_before = gtat, atat
      while want > 0 and held < share do
        if busy >= limit then
          later = tonumber(redis.call('ZRANGE', key('slots', host), 0, 0, 'WITHSCORES')[2])
          break
        end
        local start = math.max(now, htat, gtat, atat)
        if tokens then
          local token = next_token()
          if not token then
            break
          end
          start = math.max(token, htat, atat)
          if start > token then
            -- The host is not free at the crawl's next start: the start goes to another.
            later = start - horizon
            break
          end
          used = used + 1
        end
        if start > now + horizon then
          later = start - horizon
          break
        end
        table.insert(starts, start)
        if gspacing > 0 then
          gtat = start + gspacing
        end
        if aspacing then
          atat = start + aspacing
        end
        busy = busy + 1
        held = held + 1
        want = want - 1
      end
      if #starts > 0 then
        local popped = redis.call('ZPOPMIN', key('q', host), #starts)
        local n = #popped / 2
        if n < #starts then
          -- Fewer queued than the limits allow: the starts not taken are not spent.
          local unused = #starts - n
          busy = busy - unused
          held = held - unused
          want = want + unused
          gtat = n > 0 and gspacing > 0 and starts[n] + gspacing or (n > 0 and gtat) or gtat_before
          if tokens then
            used = used - unused
          end
          atat = n > 0 and aspacing and starts[n] + aspacing or (n > 0 and atat) or atat_before
        end
        for j = 1, n do
          ids[j] = popped[2 * j - 1]
        end
        for j, v in ipairs(records(ids)) do
          table.insert(leased, { host, (starts[j] - now) / 1000, tonumber(ids[j]) })
          table.insert(requests, v and select(3, read_record(v)) or '')
        end
      end
      if #ids > 0 then
        local scored = {}
        for _, id in ipairs(ids) do
          table.insert(scored, now + lease)
          table.insert(scored, id)
          table.insert(owned, now + lease)
          table.insert(owned, leased_by_me(id))
          table.insert(owned_ids, id)
        end
        each('ZADD', key('slots', host), scored)
        redis.call('HINCRBY', key('limit', host), 'held:' .. worker, #ids)
        if aspacing then
          redis.call('HSET', key('limit', host), 'atat', atat)
        end
      end
      if redis.call('EXISTS', key('q', host)) == 0 then
        redis.call('ZREM', key('ready'), host)
      elseif later then
        redis.call('ZADD', key('ready'), later, host)
      end
    end
  end
end
if #owned_ids > 0 then
  each('ZADD', key('leases'), owned)
  each('SADD', key('mine', worker), owned_ids)
end
-- Requests queued by this round less those it leased, in one call.
if added ~= #leased then
  redis.call('INCRBY', key('queued'), added - #leased)
end
if gspacing > 0 then
  redis.call('SET', key('tat'), gtat)
end

local gauge = nil
if r.beat then
  redis.call('HSET', key('workers'), worker, r.beat)
  gauge = {
    answered = 0,
    blocked = 0,
    hosts = {},
    proxy_bytes = tonumber(redis.call('HGET', key('stats'), 'proxy_bytes') or '0'),
    limits = {},
    refusing = redis.call('SMEMBERS', key('refusing')),
  }
  for _, host in ipairs(r.gauge_hosts) do
    local l = redis.call('HMGET', key('limit', host), 'alimit', 'arps')
    if l[1] then
      gauge.limits[host] = { tonumber(l[1]), tonumber(l[2]) }
    end
  end
  local fields = { 'a', 'b' }
  for _, host in ipairs(r.gauge_hosts) do
    table.insert(fields, host .. ' a')
    table.insert(fields, host .. ' b')
  end
  for s = second - r.window_s + 1, second do
    local v = redis.call('HMGET', key('answers', s), unpack(fields))
    gauge.answered = gauge.answered + (tonumber(v[1]) or 0)
    gauge.blocked = gauge.blocked + (tonumber(v[2]) or 0)
    for i, host in ipairs(r.gauge_hosts) do
      local counts = gauge.hosts[host] or { 0, 0 }
      counts[1] = counts[1] + (tonumber(v[2 * i + 1]) or 0)
      counts[2] = counts[2] + (tonumber(v[2 * i + 2]) or 0)
      gauge.hosts[host] = counts
    end
  end
end

-- The fleet's queues, and when this worker should ask again if it got nothing (the first
-- host or retry due): for a round that wanted requests and leased none, the heartbeat and
-- the last round. A worker busy with what it leased, or with no room for more, needs no
-- count, and its round saves the calls.
local queues = nil
if (#leased == 0 and r.want > 0) or r.beat or r.ending then
  queues = {
    queued = tonumber(redis.call('GET', key('queued')) or '0'),
    deferred = redis.call('ZCARD', key('deferred')),
    leases = redis.call('ZCARD', key('leases')),
    mine = redis.call('SCARD', key('mine', worker)),
    wake_ms = -1,
  }
  local wake = nil
  local first = redis.call('ZRANGE', key('ready'), 0, 0, 'WITHSCORES')[2]
  if first then
    wake = math.max(0, tonumber(first) - now) / 1000
  end
  local due = redis.call('ZRANGE', key('deferred'), 0, 0, 'WITHSCORES')[2]
  if due then
    wake = math.min(wake or math.huge, math.max(0, tonumber(due) - now) / 1000)
  end
  queues.wake_ms = wake or -1
  -- A crawl in parts is done when every part is empty at once, which the worker asks.
  if queues.queued == 0 and queues.deferred == 0 and queues.leases == 0 and r.ending and not r.parted then
    redis.call('SET', key('done'), math.floor(now / 1000))
  end
end

-- A worker that found Redis lost writes says why in P:meta; the others read it in the
-- rounds that sweep, a few rounds later at most, and stop too.
local broken = sweep and redis.call('HGET', key('meta'), 'broken') or nil

local head = cjson.encode({
  leased = leased,
  claims = claims,
  answers = answers,
  queues = queues,
  reaped = reaped,
  gauge = gauge,
  clock = { tonumber(clock[1]), tonumber(clock[2]) },
  epoch = epoch,
  broken = broken,
  used = used,
  void = void,
  cut = cut,
})
table.insert(requests, 1, head)
local reply = table.concat(requests, '\n')
-- Kept for a round sent again after Redis was out of reach: for twice the lease, and a
-- minute at least.
if visit then
  return reply
end
redis.call('SET', key('round', worker), r.number .. '\n' .. reply, 'PX', math.floor(math.max(2 * lease, 60000000) / 1000))
return reply

