"""The Lua script that makes a limit check one atomic round trip on Redis.

A script rather than a rate-limit library: one check covers several limits at
once (sliding windows per user and chat, and daily budgets read from the
spend hashes) and counts the message only when all of them pass; the
libraries (e.g. `limits`, `redis-rate-limiter`) check one key per call, so
that would be several round trips and a race between them. The repo already
runs its coordination steps this way (`gateway/coord/_lua.py`).
"""
from __future__ import annotations

ADMIT = """
local now, win, member = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local midnight, keep, n = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
for i = 1, n do
  local a, k = 6 + (i - 1) * 4, 3 + (i - 1) * 2
  local metric, field, limit, hit = ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3]), ARGV[a + 4]
  local resets = nil
  if metric == 'messages' then
    redis.call('ZREMRANGEBYSCORE', KEYS[k + 1], '-inf', now - win)
    if redis.call('ZCARD', KEYS[k + 1]) >= limit then
      local oldest = redis.call('ZRANGE', KEYS[k + 1], 0, 0, 'WITHSCORES')
      resets = tonumber(oldest[2]) + win
    end
  else
    local spent = KEYS[1]
    if metric == 'cost' then spent = KEYS[2] end
    if tonumber(redis.call('HGET', spent, field) or '0') >= limit then resets = midnight end
  end
  if resets then
    redis.call('HINCRBY', KEYS[3], hit, 1)
    redis.call('EXPIRE', KEYS[3], keep)
    local said = tonumber(redis.call('GET', KEYS[k + 2]) or '0')
    if said > now then return {i, tostring(resets), 0} end
    redis.call('SET', KEYS[k + 2], tostring(resets), 'PX', math.max(1, math.floor(resets - now)) + 60000)
    return {i, tostring(resets), 1}
  end
end
for i = 1, n do
  local a, k = 6 + (i - 1) * 4, 3 + (i - 1) * 2
  if ARGV[a + 1] == 'messages' then
    redis.call('ZADD', KEYS[k + 1], now, member)
    redis.call('PEXPIRE', KEYS[k + 1], math.floor(win) + 60000)
  end
end
return {0, '0', 0}
"""
"""KEYS: tokens hash, cost hash, hits hash (today's), then per rule its window zset and its said-once key.
The said-once key holds when its window ends (the caller's clock, not Redis's: tests inject time);
expiries are only clean-up, with a minute to spare.
ARGV: now ms, window ms, message id, next midnight ms, day keep s, rule count, then per rule
metric, field, limit, hit field. Returns {rule index (0: admitted), resets at ms, 1 if first refusal in the window}."""
