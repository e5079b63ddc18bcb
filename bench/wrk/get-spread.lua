-- GET an EVSE drawn at random from the 40 demo EVSEs (uids 1001-1040), with the API key
-- of BENCH_KEY.
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_KEY")
init = function(args) math.randomseed(tonumber(string.sub(tostring({}), 8)) or os.time()) end
request = function()
  return wrk.format(nil, string.format("/v2/evses/%d", 1001 + math.random(0, 39)))
end
