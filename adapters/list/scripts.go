package list

import (
	"embed"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/internal/luakit"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// Every state change of this backend is one of these scripts. Each is internal/luakit's
// common.lua, groupstate.lua and registry.lua, then lua/lib.lua (helpers, no keys of their
// own), then the verb's file, whose header names its KEYS and ARGV. redis.Script runs EVALSHA
// and falls back to EVAL on NOSCRIPT. extend and deadletters are luakit.GroupScript verbs,
// shared word for word with zset.
var (
	publishScript     = script("publish")
	claimScript       = script("claim")
	registerScript    = script("register")
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
	return luakit.Script(luaFiles, name, luakit.GroupState, luakit.Registry)
}
