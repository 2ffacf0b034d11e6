
local log, boxes = KEYS[1], KEYS[2]
local box, cursor = ARGV[1], ARGV[2]
local max_entry_bytes, budget = tonumber(ARGV[5]), tonumber(ARGV[7])
for _, want in ipairs({{log, 'stream'}, {boxes, 'zset'}}) do
  local t = redis.call('TYPE', want[1]).ok
  if t ~= want[2] and t ~= 'none' then
    return redis.error_reply('FGBADKEY ' .. want[1] .. ' holds a ' .. t .. ', not a ' .. want[2])
  end
end
local time = redis.call('TIME')
local now_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZADD', boxes, now_ms, box)
redis.call('ZREMRANGEBYSCORE', boxes, '-inf', now_ms - tonumber(ARGV[3]))
-- Only this clock stamps heartbeats: one from its future was not written by a box's sync, and
-- would stay live for as long as its score says.
redis.call('ZREMRANGEBYSCORE', boxes, '(' .. now_ms, '+inf')
local live = redis.call('ZCARD', boxes)
local function last_id()
  local last = redis.call('XREVRANGE', log, '+', '-', 'COUNT', 1)[1]
  return last and last[1]
end
local function before(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as < bs)
end
-- A box's first sync starts after the last entry: history from before it joined is not its.
if cursor == '' then cursor = last_id() or '0-0' end
for i = 8, #ARGV do
  redis.call('XADD', log, 'MINID', '~', now_ms - tonumber(ARGV[6]), '*', 'b', box, 'd', ARGV[i])
end
local entries = redis.call('XRANGE', log, '(' .. cursor, '+', 'COUNT', ARGV[4])
if #entries == 0 and cursor ~= '0-0' then
  -- A cursor past the last entry is older than the stream (a restart that set the store's
  -- clock back, or the stream emptied): all the stream holds is unread.
  local last = last_id()
  if last == nil or before(last, cursor) then
    cursor = '0-0'
    entries = redis.call('XRANGE', log, '-', '+', 'COUNT', ARGV[4])
  end
end
local out, skipped = {cursor, live, 0}, 0
for _, e in ipairs(entries) do
  local f, b, d = e[2], nil, nil
  if #f == 4 and f[1] == 'b' and f[3] == 'd' then
    b, d = f[2], f[4]
  elseif #f == 4 and f[1] == 'd' and f[3] == 'b' then
    b, d = f[4], f[2]
  end
  if b == nil or #b + #d > max_entry_bytes then
    skipped = skipped + 1
  elseif b ~= box then
    if #b + #d > budget then break end
    budget = budget - #b - #d
    out[#out + 1] = b
    out[#out + 1] = d
  end
  out[1] = e[1]
end
out[3] = skipped
return out
