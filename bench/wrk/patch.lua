-- PATCH a connector with a different value on every request (maxElectricPower from 1 to
-- 400 kW, and every 7th request the voltage), with the API key of BENCH_KEY.
wrk.method = "PATCH"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_KEY")
wrk.headers["Content-Type"] = "application/json"
local n = 0
request = function()
  n = n + 1
  local body
  if n % 7 == 0 then
    body = string.format('{"maxVoltage": %d}', 200 + n % 800)
  else
    body = string.format('{"maxElectricPower": %d.5}', 1 + n % 400)
  end
  return wrk.format(nil, nil, nil, body)
end
