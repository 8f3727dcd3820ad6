-- idempotent_acquire: take an idempotency marker for one handler run (SET NX PX), or report
-- who has it. The lookup runs in the same script so that it cannot race with the holder's
-- release; SET's NX and GET options together would need Redis 7.0 (relq supports 6.2).
--
-- KEYS[1] -> the marker key
-- ARGV[1] -> this run's in-progress value, "p:<token>"
-- ARGV[2] -> in-progress TTL in milliseconds
--
-- Returns {1} when this run took the marker; otherwise {0, value, pttl}: the marker's value
-- ("d:<token>" done, "p:<token>" in progress) and its remaining TTL in milliseconds.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1}
end
return {0, redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}
