package zset

import (
	"embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// wakeTTL bounds how long an unclaimed wake-up token lives. A token matters only to a consumer
// blocked, or about to block, in BLPOP (a consumer that is not blocked runs claim.lua before it
// blocks anyway), so it need not outlive a round trip by much.
const wakeTTL = 10 * time.Second

// Every state change of this backend is one of these scripts. Each is a prelude of constants
// from Go, then lua/lib.lua (shared helpers, no keys of its own), then the verb's file, whose
// header names its KEYS and ARGV. redis.Script runs EVALSHA and falls back to EVAL on NOSCRIPT.
var (
	publishScript     = script("publish")
	claimScript       = script("claim")
	wakeScript        = script("wake")
	ackScript         = script("ack")
	nackScript        = script("nack")
	extendScript      = script("extend")
	reclaimScript     = script("reclaim")
	deadLettersScript = script("deadletters")
	requeueScript     = script("requeue")
	purgeScript       = script("purge")
	statsScript       = script("stats")
	injectScript      = script("inject")
)

func script(name string) *redis.Script {
	lib, err := luaFiles.ReadFile("lua/lib.lua")
	if err != nil {
		panic(err)
	}
	body, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	prelude := fmt.Sprintf("local PRIORITY_MIN, PRIORITY_MAX, RANK_DIGITS = %d, %d, %d\nlocal WAKE_TTL_MS = %d\n",
		PriorityMin, PriorityMax, rankDigits, wakeTTL.Milliseconds())
	return redis.NewScript(prelude + string(lib) + "\n" + string(body))
}
