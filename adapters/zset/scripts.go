package zset

import (
	"embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/internal/luakit"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// wakeTTL bounds how long an unclaimed wake-up token lives. A token matters only to a consumer
// blocked, or about to block, in BLPOP (a consumer that is not blocked runs claim.lua before it
// blocks anyway), so it need not outlive a round trip by much.
const wakeTTL = 10 * time.Second

// Every state change of this backend is one of these scripts. Each is a prelude of constants
// from Go, then internal/luakit's common.lua, groupstate.lua and registry.lua, then lua/lib.lua
// (helpers, no keys of their own), then the verb's file, whose header names its KEYS and ARGV.
// redis.Script runs EVALSHA and falls back to EVAL on NOSCRIPT. extend and deadletters are
// luakit.GroupScript verbs, shared word for word with list.
var (
	publishScript     = script("publish")
	claimScript       = script("claim")
	wakeScript        = script("wake")
	ackScript         = script("ack")
	nackScript        = script("nack")
	extendScript      = luakit.GroupScript("extend")
	reclaimScript     = script("reclaim")
	deadLettersScript = luakit.GroupScript("deadletters")
	requeueScript     = script("requeue")
	purgeScript       = script("purge")
	statsScript       = script("stats")
	injectScript      = script("inject")
)

func script(name string) *redis.Script {
	prelude := fmt.Sprintf("local PRIORITY_MIN, PRIORITY_MAX, RANK_DIGITS = %d, %d, %d\nlocal WAKE_TTL_MS = %d\n",
		PriorityMin, PriorityMax, rankDigits, wakeTTL.Milliseconds())
	return redis.NewScript(prelude + luakit.Source(luaFiles, name, luakit.GroupState, luakit.Registry))
}
