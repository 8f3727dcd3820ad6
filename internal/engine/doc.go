// Package engine is the group-state engine that the list and zset backends share: holders,
// attempts, leases, dead letters, body references, the group registry, publish idempotency and
// stats live here once, in Go and in Lua (lua/). A backend supplies only its ready store: the
// Lua functions of its store.lua (how messages enter ready, are taken, go back and are
// counted), the names of its keys, and its own blocking claim.
//
// A script is common.lua (internal/luakit), the backend's constants, lua/engine.lua, the
// backend's store.lua, lua/lifecycle.lua (registering and deleting groups, which uses the
// store's functions), then the verb's file (this package's lua/ or the backend's own).
// Every script declares all its keys in KEYS, so it stays single-slot on Cluster.
//
// The lifecycle (pubsub's backlog rule, Admin, Ephemeral): a topic with no group keeps what is
// published in its backlog, T:backlog:<store key>, bounded and expiring, which the first group
// to register RENAMEs to its own keys. A group's registry value carries its flags (paused,
// ephemeral). Deleting a group unregisters it first (its claims then fail with
// backend.ErrGroupDeleted, and settling writes nothing), then frees what it held in steps of
// BatchSize through the topic's trash, which publishes, reclaims and deletes continue; the
// last group takes every key of the topic with it.
package engine
