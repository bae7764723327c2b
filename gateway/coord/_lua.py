"""Lua scripts that make each Redis coordination step atomic (check-then-act in one round trip).

Every key a script touches is passed in KEYS, so the scripts stay valid on a
cluster with hash tags. Knows nothing but Redis commands.
"""
from __future__ import annotations

COMPARE_AND_PEXPIRE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
"""KEYS[1] lock; ARGV[1] token, ARGV[2] ttl ms. 1 if the token still owned it and it was extended."""

COMPARE_AND_DELETE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""
"""KEYS[1] lock; ARGV[1] token. 1 if the token owned it and it was deleted."""

ACQUIRE_OR_EXTEND = """
local current = redis.call('GET', KEYS[1])
if not current then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if current == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""
"""KEYS[1] lease; ARGV[1] owner, ARGV[2] ttl ms. 1 if the owner holds it afterwards (re-entrant)."""

LRU_TOUCH = """
local tick = redis.call('INCR', KEYS[3])
redis.call('ZADD', KEYS[1], tick, ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[4], ARGV[4])
local evicted = {}
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3])
if over > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[1], over)
  for i = 1, #popped, 2 do
    evicted[#evicted + 1] = popped[i]
    redis.call('HDEL', KEYS[2], popped[i])
  end
end
return evicted
"""
"""KEYS: order zset, owner hash, tick counter, state of the touched key.
ARGV: key, owner, capacity, state ttl s. Returns the evicted keys, least recent first.
The tick is a counter, not a clock, so processes with skewed clocks agree on the order."""

LRU_EVICT = """
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[3])
return 1
"""
"""KEYS: order zset, owner hash, state; ARGV[1] key."""

OUTBOX_CLAIM = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return 0
end
local current = redis.call('GET', KEYS[2])
if current and current ~= ARGV[2] then
  return 0
end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
if not current then
  redis.call('HINCRBY', KEYS[3], ARGV[1], 1)
end
return 1
"""
"""KEYS: items hash, claim key, attempts hash; ARGV: id, owner, ttl ms.
1 if the item is unacknowledged and now claimed by owner; a fresh claim counts one attempt."""
