package streams

import (
	"embed"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/internal/luakit"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// Every state change of this backend is one of these scripts. Each is internal/luakit's
// common.lua, then lua/lib.lua (helpers, no keys of their own), then the verb's file, whose
// header names its KEYS and ARGV. redis.Script runs EVALSHA and falls back to EVAL on NOSCRIPT.
var (
	publishScript     = script("publish")
	ensureGroupScript = script("ensuregroup")
	claimScript       = script("claim")
	ackScript         = script("ack")
	nackScript        = script("nack")
	extendScript      = script("extend")
	reclaimScript     = script("reclaim")
	deadLettersScript = script("deadletters")
	requeueScript     = script("requeue")
	purgeScript       = script("purge")
	statsScript       = script("stats")
	cleanupScript     = script("cleanup")
	injectScript      = script("inject")
)

func script(name string) *redis.Script {
	return luakit.Script(luaFiles, name)
}
