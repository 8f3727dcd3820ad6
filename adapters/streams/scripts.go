package streams

import (
	"embed"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/internal/luakit"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// Every state change of this backend is one of these scripts. Each is the verb's file, whose
// header names its KEYS and ARGV, preceded by the helpers it uses of internal/luakit's
// common.lua and lua/lib.lua (luakit.Link). redis.Script runs EVALSHA and falls back to EVAL
// on NOSCRIPT.
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
	injectScript      = script("inject")
	joinScript        = script("join")
	deleteGroupScript = script("deletegroup")
	releaseScript     = script("release")
	deleteTopicScript = script("deletetopic")
	topicScript       = script("topic")
	pauseScript       = script("pause")
	messagesScript    = script("messages")
	messageScript     = script("message")
	deleteMsgScript   = script("deletemessage")
	runMsgScript      = script("runmessage")
)

func script(name string) *redis.Script {
	return redis.NewScript(luakit.Link(read("lua/"+name+".lua"), luakit.Common(), read("lua/lib.lua"), read("lua/inspect.lua")))
}

func read(name string) string {
	b, err := luaFiles.ReadFile(name)
	if err != nil {
		panic(err) // a missing embedded file is a build mistake
	}
	return string(b)
}
