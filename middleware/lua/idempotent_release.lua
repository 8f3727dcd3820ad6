-- idempotent_release: delete an in-progress marker, only if this run still holds it (compare
-- and delete). A run whose marker expired must not delete the marker of the run that took it
-- over, nor a done marker.
--
-- KEYS[1] -> the marker key
-- ARGV[1] -> this run's in-progress value, "p:<token>"
--
-- Returns 1 when the marker was deleted, 0 when another run or a done marker holds the key.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
