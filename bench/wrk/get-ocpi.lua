-- GET with the OCPI credentials token of the environment variable OCPI_TOKEN (Base64
-- encoded by the script that sets it).
wrk.headers["Authorization"] = "Token " .. os.getenv("OCPI_TOKEN")
