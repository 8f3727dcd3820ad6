package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/backendkit"
)

// confirmEvery is how stale a registry's learned time may grow before a publish routed by it
// records the new one: the trust it gives is measured in hours (TombstoneTTL), and writing it
// on every publish would make concurrent publishers of a topic contend for one cache line.
const confirmEvery = time.Second

// registryIdle is how long a cached registry that can restore no group stays cached unused:
// a topic this process published to once (a reply topic) is forgotten a minute or two later,
// and its groups' ends in other processes with it; publishing to it again costs one more
// round trip to learn it. A registry that can restore a durable group is kept while it is
// trusted (TombstoneTTL after its last use), since that is what it is kept for.
const registryIdle = time.Minute

// registry is a topic's registered groups as Publish last saw them, with their version.
//
// It also keeps what a publisher needs to restore groups that vanished from Redis without a
// delete (publish.lua's restorable): which groups are durable, when Redis last confirmed
// them, and the candidates, durable groups it knew that a registry it learned since left out
// because that registry started afresh (a Redis that came back empty, where this process's
// own subscription registered its group again first).
type registry struct {
	version string
	// reborn is the version the registry last started afresh at (0: unknown).
	reborn    int64
	groups    []string
	ephemeral []bool // ephemeral[i] tells whether groups[i] is ephemeral
	// durable and none are publish.lua's masks of groups that may be restored: the durable
	// ones, or none (the registry is no longer trusted).
	durable, none string
	// learned is when Redis last confirmed this registry (unix ns): a publish routed by it,
	// or a script replied with it.
	learned    atomic.Int64
	candidates []candidate
}

// candidate is a durable group a process knew, seen registered at version seen and learned
// at learned (unix ns), that its cached registry no longer lists.
type candidate struct {
	name    string
	seen    string
	learned int64
}

// trusted reports whether what was learned at learned (unix ns) may still restore a group: a
// group deleted since then has its tombstone still, unless Redis lost it with everything else.
func trusted(learned int64, ttl time.Duration) bool {
	return time.Since(time.Unix(0, learned)) < ttl
}

// mask is publish.lua's ARGV mask of the registry's groups it may restore.
func (r *registry) mask(ttl time.Duration) string {
	if trusted(r.learned.Load(), ttl) {
		return r.durable
	}
	return r.none
}

// confirmed records that Redis routed a publish by this registry.
func (r *registry) confirmed() {
	now := time.Now().UnixNano()
	if now-r.learned.Load() > int64(confirmEvery) {
		r.learned.Store(now)
	}
}

// trustedCandidates are the candidates still trusted, as publish.lua's ARGV pairs.
func (r *registry) trustedCandidates(ttl time.Duration) []any {
	var out []any
	for _, c := range r.candidates {
		if trusted(c.learned, ttl) {
			out = append(out, c.name, c.seen)
		}
	}
	return out
}

// settled returns the registry without candidates: publish.lua found none to restore.
func (r *registry) settled() *registry {
	s := &registry{version: r.version, reborn: r.reborn, groups: r.groups, ephemeral: r.ephemeral,
		durable: r.durable, none: r.none}
	s.learned.Store(r.learned.Load())
	return s
}

// known lists the durable groups r knew, each with the version it was seen registered at and
// when that was learned: its own groups and its candidates.
func (r *registry) known() []candidate {
	var out []candidate
	learned := r.learned.Load()
	for i, g := range r.groups {
		if !r.ephemeral[i] {
			out = append(out, candidate{name: g, seen: r.version, learned: learned})
		}
	}
	return append(out, r.candidates...)
}

// restorable reports whether publish.lua may restore a group by r: a durable group of its
// own, or a candidate, still trusted.
func (r *registry) restorable(ttl time.Duration) bool {
	return (trusted(r.learned.Load(), ttl) && strings.Contains(r.durable, "1")) || len(r.trustedCandidates(ttl)) > 0
}

// sweepRegistries drops the cached registries unused for registryIdle that can restore no
// group (their topics' groups may have ended in another process, which this one would
// never learn), at most once per registryIdle. Only remember adds an entry, and it calls
// this, so the cache holds the topics published to within about two registryIdle, and those
// it keeps to restore groups.
func (e *Engine) sweepRegistries(now int64) {
	last := e.registriesSwept.Load()
	if now-last < int64(e.registryIdle) || !e.registriesSwept.CompareAndSwap(last, now) {
		return
	}
	e.registries.Range(func(topic, v any) bool {
		reg := v.(*registry)
		if now-reg.learned.Load() >= int64(e.registryIdle) && !reg.restorable(e.tombstoneTTL) {
			e.registries.CompareAndDelete(topic, reg) // not one remembered meanwhile
		}
		return true
	})
}

// cached returns the registry Publish last saw on topic, or version "0" with no group.
func (e *Engine) cached(topic string) *registry {
	if v, ok := e.registries.Load(topic); ok {
		return v.(*registry)
	}
	return &registry{version: "0"}
}

// remember caches a registry reply {version, reborn, groups...}, an ephemeral group as
// "name:e". Names are checked again: a foreign member with braces would address keys outside
// the topic's slot. The durable groups the registry it replaces knew (trusted still) and the
// new one lacks become candidates when the new one started afresh after they were seen (or is
// older than when they were seen: Redis lost writes); otherwise their absence is a delete.
func (e *Engine) remember(topic string, reply []any) (*registry, error) {
	reg := &registry{version: replyString(reply[0]), reborn: versionNum(replyString(reply[1]))}
	type member struct {
		name      string
		ephemeral bool
	}
	members := make([]member, 0, len(reply)-2)
	for _, m := range reply[2:] {
		name, ephemeral := strings.CutSuffix(replyString(m), ":e")
		if err := backend.ValidateName("group", name); err != nil {
			return reg, fmt.Errorf("%s: registered group: %w", e.store.Name, err)
		}
		members = append(members, member{name, ephemeral})
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.name, b.name) })
	durable, none := make([]byte, len(members)), make([]byte, len(members))
	for i, m := range members {
		reg.groups = append(reg.groups, m.name)
		reg.ephemeral = append(reg.ephemeral, m.ephemeral)
		durable[i], none[i] = '1', '0'
		if m.ephemeral {
			durable[i] = '0'
		}
	}
	reg.durable, reg.none = string(durable), string(none)
	reg.learned.Store(time.Now().UnixNano())
	version := versionNum(reg.version)
	for _, c := range e.cached(topic).known() {
		if slices.Contains(reg.groups, c.name) || !trusted(c.learned, e.tombstoneTTL) {
			continue
		}
		if seen := versionNum(c.seen); reg.reborn > seen || version < seen {
			reg.candidates = append(reg.candidates, c)
		}
	}
	e.registries.Store(topic, reg)
	e.sweepRegistries(reg.learned.Load())
	return reg, nil
}

// replyString reads a reply element that Redis may send as a string or an integer.
func replyString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return strconv.FormatInt(backendkit.Int(v), 10)
}

// versionNum reads a registry version (Redis's clock in µs); 0 for none or foreign data.
func versionNum(v string) int64 {
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}
