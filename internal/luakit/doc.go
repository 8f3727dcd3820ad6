// Package luakit assembles the streams adapter's Lua scripts and holds the helpers every
// script of every adapter starts with (common.lua: the Redis clock, chunked variadic calls,
// tombstones, the sweep of idle publish lane records). internal/engine assembles the list and
// zset scripts with Common.
//
// A helper file declares no keys: a helper takes the key names its calling script received
// in KEYS, so every script stays single-slot on Cluster.
package luakit
