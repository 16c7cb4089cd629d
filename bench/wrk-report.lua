-- Prints one machine-readable line at the end of a wrk/wrk2 run:
-- LOADGATE_REPORT requests p50_ms p90_ms p99_ms p999_ms max_ms errors
done = function(summary, latency, requests)
  local e = summary.errors
  local errors = e.connect + e.read + e.write + e.status + e.timeout
  io.write(string.format("LOADGATE_REPORT %d %.3f %.3f %.3f %.3f %.3f %d\n",
    summary.requests,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000,
    latency:percentile(99) / 1000, latency:percentile(99.9) / 1000,
    latency.max / 1000, errors))
end
