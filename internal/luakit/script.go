package luakit

import (
	"embed"
	"io/fs"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed common.lua
var files embed.FS

// Source returns the text of the script of verb name: common.lua, then fsys's lua/lib.lua and
// lua/<name>.lua. fsys is an adapter's embedded lua/*.lua, so a missing file is a build
// mistake, and Source panics on it when the adapter's scripts are built.
func Source(fsys fs.FS, name string) string {
	return strings.Join([]string{read(files, "common.lua"), read(fsys, "lua/lib.lua"), read(fsys, "lua/"+name+".lua")}, "\n")
}

// Script is Source as a redis.Script, which runs EVALSHA and falls back to EVAL on NOSCRIPT.
func Script(fsys fs.FS, name string) *redis.Script {
	return redis.NewScript(Source(fsys, name))
}

func read(fsys fs.FS, name string) string {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Common returns common.lua, for scripts assembled elsewhere (internal/engine).
func Common() string { return read(files, "common.lua") }
