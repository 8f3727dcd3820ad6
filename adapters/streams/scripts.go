package streams

import (
	"embed"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// Every state change of this backend is one of these scripts. Each is lua/lib.lua (shared
// helpers, no keys of its own) followed by the verb's file, whose header names its KEYS and
// ARGV. redis.Script runs EVALSHA and falls back to EVAL on NOSCRIPT.
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
	lib, err := luaFiles.ReadFile("lua/lib.lua")
	if err != nil {
		panic(err)
	}
	body, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return redis.NewScript(string(lib) + "\n" + string(body))
}
