-- PATCH connector 1 of an EVSE drawn at random from the 40 demo EVSEs (uids 1001-1040),
-- a different maxElectricPower on every request, with the API key of BENCH_KEY.
wrk.method = "PATCH"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_KEY")
wrk.headers["Content-Type"] = "application/json"
local n = 0
init = function(args) math.randomseed(tonumber(string.sub(tostring({}), 8)) or os.time()) end
request = function()
  n = n + 1
  local path = string.format("/v2/evses/%d/connectors/1", 1001 + math.random(0, 39))
  local body = string.format('{"maxElectricPower": %d.5}', 1 + n % 400)
  return wrk.format(nil, path, nil, body)
end
