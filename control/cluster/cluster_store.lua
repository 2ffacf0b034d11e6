
local log, boxes = KEYS[1], KEYS[2]
local box, cursor = ARGV[1], ARGV[2]
local max_entry_bytes, budget = tonumber(ARGV[5]), tonumber(ARGV[7])
local with_history = ARGV[8] == '1'
-- The signed fields: seq, time, key id, MAC (each short), beside b = box and d = payload.
local signed_fields = {'s', 't', 'k', 'm'}
local max_signed_bytes = 80
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
-- With history asked for, it also reads the box_timeout before, for heartbeats and sequence
-- numbers only: the entries up to `joined` are never charged.
local first = cursor == ''
local joined = last_id() or '0-0'
if first then
  cursor = with_history and (math.max(0, now_ms - tonumber(ARGV[3])) .. '-0') or joined
end
-- Each push is five arguments: seq, time, key id, MAC (all empty: unsigned) and payload.
for i = 9, #ARGV - 4, 5 do
  local fields = {'b', box}
  if ARGV[i] ~= '' then
    for j, name in ipairs(signed_fields) do
      fields[#fields + 1] = name
      fields[#fields + 1] = ARGV[i + j - 1]
    end
  end
  fields[#fields + 1] = 'd'
  fields[#fields + 1] = ARGV[i + 4]
  redis.call('XADD', log, 'MINID', '~', now_ms - tonumber(ARGV[6]), '*', unpack(fields))
end
local entries = redis.call('XRANGE', log, '(' .. cursor, '+', 'COUNT', ARGV[4])
if not first and #entries == 0 and cursor ~= '0-0' then
  -- A cursor past the last entry is older than the stream (a restart that set the store's
  -- clock back, or the stream emptied): all the stream holds is unread.
  local last = last_id()
  if last == nil or before(last, cursor) then
    cursor = '0-0'
    entries = redis.call('XRANGE', log, '-', '+', 'COUNT', ARGV[4])
  end
end
local out, skipped = {cursor, live, 0, joined}, 0
for _, e in ipairs(entries) do
  -- Known fields, each at most once, b and d present; anything else is skipped.
  local f, got, ok = e[2], {}, #e[2] % 2 == 0
  for i = 1, #f - 1, 2 do
    local name = f[i]
    if got[name] ~= nil or not (name == 'b' or name == 'd' or name == 's' or name == 't' or
                                name == 'k' or name == 'm') then
      ok = false
    elseif name ~= 'b' and name ~= 'd' and #f[i + 1] > max_signed_bytes then
      ok = false
    end
    got[name] = f[i + 1]
  end
  local b, d = got['b'], got['d']
  if not ok or b == nil or d == nil or #b + #d > max_entry_bytes then
    skipped = skipped + 1
  elseif b ~= box then
    if #b + #d > budget then break end
    budget = budget - #b - #d
    for _, v in ipairs({e[1], b, got['s'] or '', got['t'] or '', got['k'] or '', got['m'] or '',
                        d}) do
      out[#out + 1] = v
    end
  end
  out[1] = e[1]
end
out[3] = skipped
return out
