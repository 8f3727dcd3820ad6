// Package luakit assembles the adapters' Lua scripts: the helpers every adapter's scripts
// share (common.lua), those the list and zset adapters share over the per-group state they
// both keep (groupstate.lua) and over a topic's group registry (registry.lua), then the
// adapter's own lua/lib.lua and the verb's file.
//
// Every helper file declares no keys: a helper takes the key names its calling script
// received in KEYS, gathered in a table k, so every script stays single-slot on Cluster.
package luakit
