"""The Lua scripts of the Redis store: each change of shared state is one atomic script, so
workers and hosts never see half of one, and each costs one round trip.

Keys (``P`` is the key prefix, ``jetmcp:`` unless ``--redis-prefix`` says otherwise):

- ``P new``, ``P est``: sorted sets of session ids, new ones by creation time, established
  ones by last use (the two tiers of :class:`~jetmcp.state.memory.MemorySessionStore`).
- ``P s:<sid>``: the session record, a hash (``revision``, ``capabilities``, ``clientInfo``,
  ``logLevel``, ``initialized``, and whatever later fields a server adds), expiring after the
  idle time.
- ``P s:<sid>:log``: a Redis Stream, the session's event log (fields ``s`` stream id, ``""``
  while parked; ``q`` seq; ``e`` ``1`` on a POST stream's final event; ``d`` the message),
  bounded by ``MAXLEN`` and expiring ``event_log_seconds`` after its last write.
- ``P s:<sid>:seq``: last seq per stream; ``P s:<sid>:cur``: ``"<worker> <stream>"``, the GET
  stream that takes the session's messages; ``P s:<sid>:posts``: live POST streams (stream ->
  worker running the request); ``P s:<sid>:rp``: POST streams carried by a resumed GET
  (stream -> worker holding it); ``P s:<sid>:subs`` and ``P u:<uri>``: resource
  subscriptions both ways; ``P s:<sid>:tasks``: the session's task ids.
- ``P t:<task>``: a task (hash: ``kind`` legacy/modern, ``scope`` its session, ``""`` or,
  outside a session under auth, ``@<principal key>``,
  ``owner`` the worker running it, ``status``, ``msg``, ``created``, ``updated``, ``extra``
  its lifetime fields as JSON, ``outcome`` its result or error as JSON, ``inputs`` the
  questions it waits on), expiring ``ttl`` after its creation once terminal;
  ``P w:<worker>``: a worker's heartbeat.

Channels: ``P ctl`` (every worker: sessions ended or changed, answers, cancellations,
list changes, tasks finished, cancelled or answered) and ``P ch:<worker>`` (events for the
streams one worker holds, as ``sid\\nstream\\nseq\\nfinal\\nmessage``; seq -1 closes that
stream's connection; with no sid, ``stream`` is a task whose ``tasks/result`` waits there).

The scripts touch keys they build themselves, so the store needs one Redis server (or a
primary with replicas), not a Redis Cluster.
"""

from __future__ import annotations

PRELUDE = r"""
local P = ARGV[1]
local function nowms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function skey(sid, part)
  if part then return P .. 's:' .. sid .. ':' .. part end
  return P .. 's:' .. sid
end
local function drop(sid)
  for _, u in ipairs(redis.call('SMEMBERS', skey(sid, 'subs'))) do
    redis.call('SREM', P .. 'u:' .. u, sid)
  end
  for _, t in ipairs(redis.call('SMEMBERS', skey(sid, 'tasks'))) do
    redis.call('DEL', P .. 't:' .. t)
  end
  redis.call('DEL', skey(sid), skey(sid, 'log'), skey(sid, 'seq'), skey(sid, 'cur'),
    skey(sid, 'rp'), skey(sid, 'posts'), skey(sid, 'subs'), skey(sid, 'tasks'))
  redis.call('ZREM', P .. 'new', sid)
  redis.call('ZREM', P .. 'est', sid)
  redis.call('PUBLISH', P .. 'ctl', 'end ' .. sid)
end
local function expire(now, idle)
  for _, tier in ipairs({'new', 'est'}) do
    local old = redis.call('ZRANGEBYSCORE', P .. tier, '-inf', now - idle, 'LIMIT', 0, 500)
    for _, sid in ipairs(old) do drop(sid) end
  end
end
local function logadd(sid, maxlen, ttl, s, q, e, d)
  local k = skey(sid, 'log')
  redis.call('XADD', k, 'MAXLEN', maxlen, '*', 's', s, 'q', q, 'e', e, 'd', d)
  redis.call('PEXPIRE', k, ttl)
end
local function split(cur)
  local sp = string.find(cur, ' ', 1, true)
  return string.sub(cur, 1, sp - 1), string.sub(cur, sp + 1)
end
local function deliver(sid, d, maxlen, ttl)
  local cur = redis.call('GET', skey(sid, 'cur'))
  if cur then
    local wid, stream = split(cur)
    local q = redis.call('HINCRBY', skey(sid, 'seq'), stream, 1)
    logadd(sid, maxlen, ttl, stream, q, '0', d)
    redis.call('PUBLISH', P .. 'ch:' .. wid, sid .. '\n' .. stream .. '\n' .. q .. '\n0\n' .. d)
  else
    logadd(sid, maxlen, ttl, '', 0, '0', d)
  end
end
local function entry_ms(id)
  return tonumber(string.sub(id, 1, string.find(id, '-', 1, true) - 1))
end
local function take_parked(sid, stream, maxlen, ttl, since, out)
  local k = skey(sid, 'log')
  for _, e in ipairs(redis.call('XRANGE', k, '-', '+')) do
    local f = e[2]
    if f[2] == '' then
      redis.call('XDEL', k, e[1])
      if entry_ms(e[1]) >= since then
        local q = redis.call('HINCRBY', skey(sid, 'seq'), stream, 1)
        logadd(sid, maxlen, ttl, stream, q, '0', f[8])
        table.insert(out, q)
        table.insert(out, f[8])
      end
    end
  end
end
"""

#: ARGV: P, sid, max_sessions, max_new, protect_ms, idle_ms, then the record's field/value
#: pairs. 1 when kept, 0 when every session is in use.
ADD = r"""
local sid = ARGV[2]
local maxs, maxn = tonumber(ARGV[3]), tonumber(ARGV[4])
local protect, idle = tonumber(ARGV[5]), tonumber(ARGV[6])
local now = nowms()
expire(now, idle)
local function oldest(tier)
  local o = redis.call('ZRANGE', P .. tier, 0, 0, 'WITHSCORES')
  return o[1], tonumber(o[2])
end
if redis.call('ZCARD', P .. 'new') >= maxn then drop((oldest('new'))) end
if redis.call('ZCARD', P .. 'new') + redis.call('ZCARD', P .. 'est') >= maxs then
  if redis.call('ZCARD', P .. 'new') > 0 then
    drop((oldest('new')))
  else
    local sid0, seen = oldest('est')
    if now - seen < protect then return 0 end
    drop(sid0)
  end
end
local k = skey(sid)
for i = 7, #ARGV, 2 do redis.call('HSET', k, ARGV[i], ARGV[i + 1]) end
redis.call('PEXPIRE', k, idle + 60000)
redis.call('ZADD', P .. 'new', now, sid)
return 1
"""

#: ARGV: P, sid, idle_ms, full ("1": answer the record). Marks the session used (and
#: established); false when it does not exist (or has just idled out).
TOUCH = r"""
local sid, idle = ARGV[2], tonumber(ARGV[3])
local now = nowms()
local seen = redis.call('ZSCORE', P .. 'est', sid) or redis.call('ZSCORE', P .. 'new', sid)
if not seen then return false end
if now - tonumber(seen) > idle then
  drop(sid)
  return false
end
redis.call('ZREM', P .. 'new', sid)
redis.call('ZADD', P .. 'est', now, sid)
redis.call('PEXPIRE', skey(sid), idle + 60000)
if ARGV[4] == '1' then return redis.call('HGETALL', skey(sid)) end
return 1
"""

#: ARGV: P, sid. 1 when the session existed (it is ended now).
REMOVE = r"""
local sid = ARGV[2]
if redis.call('ZSCORE', P .. 'est', sid) or redis.call('ZSCORE', P .. 'new', sid) then
  drop(sid)
  return 1
end
return 0
"""

#: ARGV: P, idle_ms. Ends the sessions idle past their time.
SWEEP = r"""
expire(nowms(), tonumber(ARGV[2]))
return 1
"""

#: ARGV: P, sid, field, value. Changes a mutable field of a live session and tells every
#: worker (``chg <sid> <field> <value>``).
SET_FIELD = r"""
local sid = ARGV[2]
if redis.call('EXISTS', skey(sid)) == 0 then return 0 end
redis.call('HSET', skey(sid), ARGV[3], ARGV[4])
redis.call('PUBLISH', P .. 'ctl', 'chg ' .. sid .. ' ' .. ARGV[3] .. ' ' .. ARGV[4])
return 1
"""

#: ARGV: P, sid, uri, "1" to subscribe or "0" to unsubscribe.
SUBSCRIBE = r"""
local sid, uri = ARGV[2], ARGV[3]
if redis.call('EXISTS', skey(sid)) == 0 then return 0 end
if ARGV[4] == '1' then
  redis.call('SADD', skey(sid, 'subs'), uri)
  redis.call('SADD', P .. 'u:' .. uri, sid)
else
  redis.call('SREM', skey(sid, 'subs'), uri)
  redis.call('SREM', P .. 'u:' .. uri, sid)
end
return 1
"""

#: ARGV: P, maxlen, ttl_ms, message, only_initialized ("1"), then session ids. Hands the
#: message to each live session's current GET stream (or parks it).
FAN = r"""
local maxlen, ttl, d, init = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local n = 0
for i = 6, #ARGV do
  local sid = ARGV[i]
  local ok = redis.call('EXISTS', skey(sid)) == 1
  if ok and init == '1' then ok = redis.call('HGET', skey(sid), 'initialized') == '1' end
  if ok then
    deliver(sid, d, maxlen, ttl)
    n = n + 1
  end
end
return n
"""

#: ARGV: P, maxlen, ttl_ms, message, uri. FAN to the sessions subscribed to ``uri``.
FAN_URI = r"""
local maxlen, ttl, d = ARGV[2], ARGV[3], ARGV[4]
local n = 0
for _, sid in ipairs(redis.call('SMEMBERS', P .. 'u:' .. ARGV[5])) do
  if redis.call('EXISTS', skey(sid)) == 1 then
    deliver(sid, d, maxlen, ttl)
    n = n + 1
  end
end
return n
"""

#: ARGV: P, sid, worker, stream, maxlen, ttl_ms, age_ms. A new standalone GET stream takes
#: the session's messages from now on, and the parked ones: {seq, message, ...}; false when
#: the session is gone.
OPEN_GET = r"""
local sid, wid, stream = ARGV[2], ARGV[3], ARGV[4]
if redis.call('EXISTS', skey(sid)) == 0 then return false end
redis.call('SET', skey(sid, 'cur'), wid .. ' ' .. stream)
redis.call('HSETNX', skey(sid, 'seq'), stream, 0)
local out = {}
take_parked(sid, stream, ARGV[5], ARGV[6], nowms() - tonumber(ARGV[7]), out)
return out
"""

#: ARGV: P, sid, worker, stream, seq, maxlen, ttl_ms, age_ms. Resumes standalone stream
#: ``stream`` after ``seq`` here: {top seq, seq, message, ...} (its logged events, then the
#: parked ones); a connection elsewhere carrying it is closed. false when the session is gone.
RESUME_GET = r"""
local sid, wid, stream, after = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local since = nowms() - tonumber(ARGV[8])
if redis.call('EXISTS', skey(sid)) == 0 then return false end
local old = redis.call('GET', skey(sid, 'cur'))
if old and old ~= wid .. ' ' .. stream then
  local owid, ostream = split(old)
  if ostream == stream then
    redis.call('PUBLISH', P .. 'ch:' .. owid, sid .. '\n' .. stream .. '\n-1\n0\n')
  end
end
redis.call('SET', skey(sid, 'cur'), wid .. ' ' .. stream)
local out = {tonumber(redis.call('HGET', skey(sid, 'seq'), stream) or '0')}
for _, e in ipairs(redis.call('XRANGE', skey(sid, 'log'), '-', '+')) do
  local f = e[2]
  if f[2] == stream and tonumber(f[4]) > after and entry_ms(e[1]) >= since then
    table.insert(out, tonumber(f[4]))
    table.insert(out, f[8])
  end
end
take_parked(sid, stream, ARGV[6], ARGV[7], since, out)
return out
"""

#: ARGV: P, sid, worker, stream, written, maxlen, ttl_ms. A standalone GET connection here
#: ended after writing seq ``written``: the session's messages wait (parked) again, the ones
#: logged for it and not written first.
RELEASE_GET = r"""
local sid, wid, stream, written = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
if redis.call('GET', skey(sid, 'cur')) ~= wid .. ' ' .. stream then return 0 end
redis.call('DEL', skey(sid, 'cur'))
local k = skey(sid, 'log')
for _, e in ipairs(redis.call('XRANGE', k, '-', '+')) do
  local f = e[2]
  if f[2] == stream and tonumber(f[4]) > written then
    redis.call('XDEL', k, e[1])
    logadd(sid, ARGV[6], ARGV[7], '', 0, '0', f[8])
  end
end
return 1
"""

#: ARGV: P, sid, maxlen, ttl_ms, message. A message not tied to a request: to the current
#: GET stream, or parked. 0 when the session is gone.
SEND = r"""
local sid = ARGV[2]
if redis.call('EXISTS', skey(sid)) == 0 then return 0 end
deliver(sid, ARGV[5], ARGV[3], ARGV[4])
return 1
"""

#: ARGV: P, sid, worker, stream. A POST stream of this worker is live (resumable).
POST_LIVE = r"""
local sid = ARGV[2]
if redis.call('EXISTS', skey(sid)) == 0 then return 0 end
redis.call('HSET', skey(sid, 'posts'), ARGV[4], ARGV[3])
return 1
"""

#: ARGV: P, sid, stream, seq, final, maxlen, ttl_ms, message. Logs a POST stream's event and
#: hands it to the resumed GET carrying that stream, wherever it is.
POST_EVENT = r"""
local sid, stream, q, e = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if redis.call('EXISTS', skey(sid)) == 0 then return 0 end
logadd(sid, ARGV[6], ARGV[7], stream, q, e, ARGV[8])
local holder = redis.call('HGET', skey(sid, 'rp'), stream)
if holder then
  redis.call('PUBLISH', P .. 'ch:' .. holder,
    sid .. '\n' .. stream .. '\n' .. q .. '\n' .. e .. '\n' .. ARGV[8])
end
if e == '1' then
  redis.call('HDEL', skey(sid, 'posts'), stream)
  redis.call('HDEL', skey(sid, 'rp'), stream)
end
return 1
"""

#: ARGV: P, sid, stream. A POST stream ended without a final event (its request was
#: cancelled): a resumed GET carrying it is closed.
POST_END = r"""
local sid, stream = ARGV[2], ARGV[3]
redis.call('HDEL', skey(sid, 'posts'), stream)
local holder = redis.call('HGET', skey(sid, 'rp'), stream)
if holder then
  redis.call('PUBLISH', P .. 'ch:' .. holder, sid .. '\n' .. stream .. '\n-1\n0\n')
  redis.call('HDEL', skey(sid, 'rp'), stream)
end
return 1
"""

#: ARGV: P, sid, worker, stream, seq, age_ms. Resumes POST stream ``stream`` after ``seq``
#: on a GET here: {owner worker or "", ended 0/1/-1, seq, message, ...}; ended -1 when the
#: session cannot replay that stream; false when the session is gone.
RESUME_POST = r"""
local sid, wid, stream, after = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local since = nowms() - tonumber(ARGV[6])
if redis.call('EXISTS', skey(sid)) == 0 then return false end
local owner = redis.call('HGET', skey(sid, 'posts'), stream)
local found = owner and true or false
local ended = 0
local out = {owner or '', 0}
for _, e in ipairs(redis.call('XRANGE', skey(sid, 'log'), '-', '+')) do
  local f = e[2]
  if f[2] == stream then
    found = true
    if f[6] == '1' then ended = 1 end
    if tonumber(f[4]) > after and entry_ms(e[1]) >= since then
      table.insert(out, tonumber(f[4]))
      table.insert(out, f[8])
    end
  end
end
if not found then return {'', -1} end
if owner and ended == 0 then redis.call('HSET', skey(sid, 'rp'), stream, wid) end
out[2] = ended
return out
"""

#: ARGV: P, sid, worker, stream. The resumed GET here carrying POST stream ``stream`` ended.
RELEASE_POST = r"""
local sid, wid, stream = ARGV[2], ARGV[3], ARGV[4]
if redis.call('HGET', skey(sid, 'rp'), stream) == wid then
  redis.call('HDEL', skey(sid, 'rp'), stream)
end
return 1
"""

#: ARGV: P, sid, stream. 1 when a GET may resume ``stream`` (a POST stream that is live or
#: logged, a standalone stream minted for the session), 0 when not, -1 when the session is
#: gone.
PROBE = r"""
local sid, stream = ARGV[2], ARGV[3]
if redis.call('EXISTS', skey(sid)) == 0 then return -1 end
if string.sub(stream, 1, 1) == 'p' then
  if redis.call('HEXISTS', skey(sid, 'posts'), stream) == 1 then return 1 end
  for _, e in ipairs(redis.call('XRANGE', skey(sid, 'log'), '-', '+')) do
    if e[2][2] == stream then return 1 end
  end
  return 0
end
return redis.call('HEXISTS', skey(sid, 'seq'), stream)
"""

_TASK_PRELUDE = r"""
local TERMINAL = {completed = true, failed = true, cancelled = true}
local function task_expire(k)
  local ttl = tonumber(redis.call('HGET', k, 'ttl') or '-1')
  if ttl >= 0 then
    local born = tonumber(redis.call('HGET', k, 'born'))
    redis.call('PEXPIRE', k, math.max(1, born + ttl - nowms()))
  end
end
"""

#: ARGV: P, task, version, kind, scope, owner, ttl_ms (-1: none), then field/value pairs
#: (status, msg, updated, created, extra, outcome, inputs). Writes a task's state unless a
#: newer one is stored or the stored one is terminal (a task never leaves a terminal
#: status, whoever wrote it); a terminal write tells every worker (``tdone <task>``).
TASK_PUT = r"""
local id, v = ARGV[2], tonumber(ARGV[3])
local k = P .. 't:' .. id
local old = redis.call('HGET', k, 'status')
if old and TERMINAL[old] then return 0 end
if tonumber(redis.call('HGET', k, 'v') or '-1') >= v then return 0 end
local scope = ARGV[5]
if not old and redis.call('HGET', k, 'kind') == false then
  -- A session's legacy task is listed with it; a scope of '@<principal>' is a session-less
  -- principal's (no session, never listed).
  if ARGV[4] == 'legacy' and scope ~= '' and string.sub(scope, 1, 1) ~= '@' then
    if redis.call('EXISTS', skey(scope)) == 0 then return 0 end
    redis.call('SADD', skey(scope, 'tasks'), id)
  end
  redis.call('HSET', k, 'kind', ARGV[4], 'scope', scope, 'owner', ARGV[6], 'ttl', ARGV[7],
    'born', nowms())
end
redis.call('HSET', k, 'v', v)
local status
for i = 8, #ARGV, 2 do
  redis.call('HSET', k, ARGV[i], ARGV[i + 1])
  if ARGV[i] == 'status' then status = ARGV[i + 1] end
end
if status and TERMINAL[status] then
  task_expire(k)
  redis.call('PUBLISH', P .. 'ctl', 'tdone ' .. id)
end
return 1
"""

#: ARGV: P, task, kind, scope. The task's fields, or false when there is none of that kind
#: in that scope.
TASK_GET = r"""
local k = P .. 't:' .. ARGV[2]
if redis.call('HGET', k, 'kind') ~= ARGV[3] or redis.call('HGET', k, 'scope') ~= ARGV[4] then
  return false
end
return redis.call('HGETALL', k)
"""

#: ARGV: P, task, kind, scope, status, message, updated, outcome. Ends a task that is not
#: terminal yet (cancelled on request, or failed because its worker is gone) and tells every
#: worker (``tcan <task>`` reaches the one running it). {1} when ended, {0, status} when it
#: was terminal already, false when there is no such task.
TASK_END = r"""
local id = ARGV[2]
local k = P .. 't:' .. id
if redis.call('HGET', k, 'kind') ~= ARGV[3] or redis.call('HGET', k, 'scope') ~= ARGV[4] then
  return false
end
local old = redis.call('HGET', k, 'status')
if TERMINAL[old] then return {0, old} end
redis.call('HSET', k, 'status', ARGV[5], 'msg', ARGV[6], 'updated', ARGV[7],
  'outcome', ARGV[8], 'inputs', '')
redis.call('HINCRBY', k, 'v', 1000000)
task_expire(k)
redis.call('PUBLISH', P .. 'ctl', 'tcan ' .. id)
redis.call('PUBLISH', P .. 'ctl', 'tdone ' .. id)
return {1}
"""

#: ARGV: P, task, kind, scope, payload, then input keys. ``tasks/update`` in a worker that
#: does not run the task: marks each answered key (``ans:<key>``, which ``tasks/get`` in any
#: worker leaves out of ``inputRequests`` at once, before the running worker has taken the
#: answer and written its state) and tells every worker (``tupd <task> <payload>``, acted on
#: by the one running it). A task never asks two questions under one key (core/mrtr.py), so
#: a mark never hides a later question. 1 when told, 0 when the task is terminal, false when
#: there is no such task.
TASK_ANSWER = r"""
local id = ARGV[2]
local k = P .. 't:' .. id
if redis.call('HGET', k, 'kind') ~= ARGV[3] or redis.call('HGET', k, 'scope') ~= ARGV[4] then
  return false
end
if TERMINAL[redis.call('HGET', k, 'status')] then return 0 end
for i = 6, #ARGV do redis.call('HSET', k, 'ans:' .. ARGV[i], '1') end
redis.call('PUBLISH', P .. 'ctl', 'tupd ' .. id .. ' ' .. ARGV[5])
return 1
"""

#: ARGV: P, task, message. Hands a message of a task to the worker where a ``tasks/result``
#: for it waits (``sink``); 0 when none waits.
TASK_MESSAGE = r"""
local w = redis.call('HGET', P .. 't:' .. ARGV[2], 'sink')
if not w then return 0 end
redis.call('PUBLISH', P .. 'ch:' .. w, '\n' .. ARGV[2] .. '\n0\n0\n' .. ARGV[3])
return 1
"""

#: ARGV: P, task, worker, "1" (a tasks/result waits here) or "0" (no more).
TASK_SINK = r"""
local k = P .. 't:' .. ARGV[2]
if redis.call('EXISTS', k) == 0 then return 0 end
if ARGV[4] == '1' then
  redis.call('HSET', k, 'sink', ARGV[3])
elseif redis.call('HGET', k, 'sink') == ARGV[3] then
  redis.call('HDEL', k, 'sink')
end
return 1
"""

SCRIPTS: dict[str, str] = {
    name: PRELUDE + body
    for name, body in {
        "add": ADD,
        "touch": TOUCH,
        "remove": REMOVE,
        "sweep": SWEEP,
        "set_field": SET_FIELD,
        "subscribe": SUBSCRIBE,
        "fan": FAN,
        "fan_uri": FAN_URI,
        "open_get": OPEN_GET,
        "resume_get": RESUME_GET,
        "release_get": RELEASE_GET,
        "send": SEND,
        "post_live": POST_LIVE,
        "post_event": POST_EVENT,
        "post_end": POST_END,
        "resume_post": RESUME_POST,
        "release_post": RELEASE_POST,
        "probe": PROBE,
        "task_put": _TASK_PRELUDE + TASK_PUT,
        "task_get": _TASK_PRELUDE + TASK_GET,
        "task_end": _TASK_PRELUDE + TASK_END,
        "task_answer": _TASK_PRELUDE + TASK_ANSWER,
        "task_message": TASK_MESSAGE,
        "task_sink": TASK_SINK,
    }.items()
}

__all__ = ["SCRIPTS"]
