-- POST one fixed JSON-RPC body over and over; print a one-line JSON summary when done.
--
-- Environment (set by run.py):
--   BENCH_BODY_FILE         file holding the exact request body bytes
--   BENCH_PROTOCOL_VERSION  value of the MCP-Protocol-Version header ("" = no header)
--   BENCH_SESSION_ID        value of Mcp-Session-Id, only for a server that insisted on
--                           an initialize handshake even in stateless mode ("" = none)
--   BENCH_AUTHORIZATION     value of the Authorization header ("" = none): the overhead
--                           runs' bearer token
--   BENCH_HEADERS_FILE      file of "Name: value" lines, one header each, sent on every
--                           request ("" = none); a name given here replaces the default
--                           (e.g. Accept) or the variables above
--
-- response() counts every reply whose status is not 2xx (wrk's own "status" error only
-- counts >= 400) and every 2xx reply whose body holds a JSON-RPC "error" member or a tool
-- result with "isError":true, or a notifications/message (no correct reply to add or
-- tools/list has any, nor a reply to a 2026-07-28 call that named no log level). connect/read/write/timeout errors are wrk's own.
-- done() prints all of it, with the latency percentiles (in µs), on a line starting with
-- BENCH_JSON so the runner never has to parse wrk's prose.

local body_file = os.getenv("BENCH_BODY_FILE")
assert(body_file and body_file ~= "", "BENCH_BODY_FILE is not set")
local f = assert(io.open(body_file, "rb"))
local body = f:read("*a")
f:close()

wrk.method = "POST"
wrk.body = body
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
local version = os.getenv("BENCH_PROTOCOL_VERSION")
if version and version ~= "" then
  wrk.headers["MCP-Protocol-Version"] = version
end
local authorization = os.getenv("BENCH_AUTHORIZATION")
if authorization and authorization ~= "" then
  wrk.headers["Authorization"] = authorization
end
local session = os.getenv("BENCH_SESSION_ID")
if session and session ~= "" then
  wrk.headers["Mcp-Session-Id"] = session
end
local headers_file = os.getenv("BENCH_HEADERS_FILE")
if headers_file and headers_file ~= "" then
  local hf = assert(io.open(headers_file, "rb"))
  for line in hf:lines() do
    local name, value = string.match(line, "^([^:]+):%s*(.-)%s*$")
    if name then
      wrk.headers[name] = value
    end
  end
  hf:close()
end

-- Per-thread counters (each wrk thread has its own Lua state).
non2xx = 0
rpc_errors = 0

function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
  elseif body and (string.find(body, '"error"', 1, true)
                   or string.find(body, '"isError":true', 1, true)
                   or string.find(body, 'notifications/message', 1, true)) then
    rpc_errors = rpc_errors + 1
  end
end

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function done(summary, latency, requests)
  local e = summary.errors
  local bad_status, bad_rpc = 0, 0
  for _, thread in ipairs(threads) do
    bad_status = bad_status + (thread:get("non2xx") or 0)
    bad_rpc = bad_rpc + (thread:get("rpc_errors") or 0)
  end
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"non2xx":%d,"rpc_errors":%d,'
      .. '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},'
      .. '"latency_us":{"min":%d,"mean":%.2f,"stdev":%.2f,"max":%d,'
      .. '"p50":%d,"p90":%d,"p99":%d,"p999":%d}}\n',
    summary.requests, summary.duration, summary.bytes, bad_status, bad_rpc,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.mean, latency.stdev, latency.max,
    latency:percentile(50.0), latency:percentile(90.0),
    latency:percentile(99.0), latency:percentile(99.9)
  ))
end
