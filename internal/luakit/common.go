package luakit

import (
	"embed"
	"io/fs"
)

//go:embed common.lua
var files embed.FS

func read(fsys fs.FS, name string) string {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Common returns common.lua, for scripts assembled elsewhere (internal/engine).
func Common() string { return read(files, "common.lua") }
