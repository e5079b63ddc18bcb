-- A stream of status notifications: connector 1 of a charge box drawn at random from the
-- 20 demo charge boxes (501-520), its status alternating between Available and Charging
-- (timestamp: the time of receipt), with the ingest key of BENCH_INGEST_KEY.
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_INGEST_KEY")
wrk.headers["Content-Type"] = "application/json"
local n = 0
init = function(args) math.randomseed(tonumber(string.sub(tostring({}), 8)) or os.time()) end
local statuses = {"Available", "Charging"}
request = function()
  n = n + 1
  local path = string.format("/internal/v1/chargeboxes/%d/status-notifications", 501 + math.random(0, 19))
  local body = string.format('{"connectorId": 1, "errorCode": "NoError", "status": "%s"}', statuses[n % 2 + 1])
  return wrk.format(nil, path, nil, body)
end
