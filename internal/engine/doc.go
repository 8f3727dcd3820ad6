// Package engine is the group-state engine that the list and zset backends share: holders,
// attempts, leases, dead letters, body references, the group registry, publish idempotency and
// stats live here once, in Go and in Lua (lua/). A backend supplies only its ready store: the
// Lua functions of its store.lua (how messages enter ready, are taken, go back and are
// counted), the names of its keys, and its own blocking claim.
//
// A script is common.lua (internal/luakit), the backend's constants, lua/engine.lua, the
// backend's store.lua, then the verb's file (this package's lua/ or the backend's own).
// Every script declares all its keys in KEYS, so it stays single-slot on Cluster.
package engine
