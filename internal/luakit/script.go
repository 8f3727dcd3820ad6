package luakit

import (
	"embed"
	"io/fs"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed common.lua groupstate.lua registry.lua groupverbs/*.lua
var files embed.FS

// Lib is a helper file of this package that an adapter's scripts include after common.lua.
type Lib string

// GroupState holds the helpers over a group's holders, attempts, dead and dead_reasons keys,
// laid out alike by the list and zset adapters: the fencing check and burying a dead letter.
const GroupState Lib = "groupstate.lua"

// Registry holds what the publish.lua of the adapters that route with declared keys (list,
// zset) share: the check of the groups it is given against the topic's registry SET, the
// batch key, and storing the bodies with their reference counts.
const Registry Lib = "registry.lua"

// Source returns the text of the script of verb name: common.lua, then libs in order, then
// fsys's lua/lib.lua and lua/<name>.lua. fsys is an adapter's embedded lua/*.lua, so a missing
// file is a build mistake, and Source panics on it when the adapter's scripts are built.
func Source(fsys fs.FS, name string, libs ...Lib) string {
	parts := []string{read(files, "common.lua")}
	for _, l := range libs {
		parts = append(parts, read(files, string(l)))
	}
	parts = append(parts, read(fsys, "lua/lib.lua"), read(fsys, "lua/"+name+".lua"))
	return strings.Join(parts, "\n")
}

// Script is Source as a redis.Script, which runs EVALSHA and falls back to EVAL on NOSCRIPT.
func Script(fsys fs.FS, name string, libs ...Lib) *redis.Script {
	return redis.NewScript(Source(fsys, name, libs...))
}

func read(fsys fs.FS, name string) string {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// GroupScript is the script of a verb that list and zset share word for word, because it
// touches only the group keys they lay out alike (leases, holders, attempts, dead,
// dead_reasons, bodies): common.lua, groupstate.lua, then groupverbs/<name>.lua.
func GroupScript(name string) *redis.Script {
	return redis.NewScript(strings.Join([]string{
		read(files, "common.lua"), read(files, string(GroupState)), read(files, "groupverbs/"+name+".lua"),
	}, "\n"))
}
