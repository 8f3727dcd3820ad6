-- wake.lua: push a wake-up token onto a consumer's own wake-up list, at the due time its claim
-- is waiting for. Redis checks the timeouts of blocking commands on its server tick (every
-- 100 ms at the default hz 10), so a BLPOP timeout alone would deliver up to a tick late; the
-- token unblocks the BLPOP at once. No token is pushed if one is waiting already.
--
-- KEYS[1] -> the consumer's wake (LIST): {p:t}:g:<group>:wake:<consumer>
-- Returns 1.

wake(KEYS[1])
return 1
