-- GET with the API key of the environment variable BENCH_KEY.
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_KEY")
