package backendkit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/backend"
)

// scanCount is the COUNT hint of each SCAN call: how many keys Redis looks at per call, not
// how many it returns. Large enough that a big keyspace takes few round trips, small enough
// that one call never blocks Redis for long.
const scanCount = 200

// topicMark and groupMark stand for the names in a marker key while ScanTopics turns the
// adapter's own key builder into a SCAN pattern. They hold bytes that no valid name holds.
const (
	topicMark = "\x00topic\x00"
	groupMark = "\x00group\x00"
)

// TopicScan tells ScanTopics how to find the topics of one backend.
type TopicScan struct {
	// Marker builds, with the adapter's own key builder, a key that every topic with a
	// registered group has: the registry SET, the stream, a group's counters. ScanTopics
	// calls it with placeholder names to build its SCAN pattern, and with the names it reads
	// back to check each key found. A per-topic marker ignores group; a per-group marker makes
	// ScanTopics match every group's key.
	Marker func(topic, group string) string
	// Type is the Redis type of the marker key ("set", "stream", "hash"), SCAN's TYPE filter.
	Type string
	// Keep, when set, is asked about each topic found and drops those it returns false for:
	// a stream without groups, a topic another backend wrote.
	Keep func(ctx context.Context, topic string) (bool, error)
}

// ScanTopics returns the sorted, distinct names of the topics whose marker key exists and
// that s.Keep keeps. It SCANs (MATCH pattern, TYPE s.Type) on every primary of a
// *redis.ClusterClient and every shard of a *redis.Ring, and on the server of any other
// client. The pattern is the marker with each name replaced by '*' and glob characters of
// the rest escaped, so a prefix matches only itself; a key found is kept only if its names
// are valid and building the marker from them gives the key back, so the wildcard cannot
// smuggle in a longer key of the same topic. It reads the whole keyspace: meant for tools,
// not for a hot path.
func ScanTopics(ctx context.Context, client redis.UniversalClient, s TopicScan) ([]string, error) {
	m, err := newMarker(s.Marker)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var mu sync.Mutex
	err = scanKeys(ctx, client, m.pattern(), s.Type, func(key string) {
		if topic, ok := m.parse(key); ok {
			mu.Lock()
			seen[topic] = true
			mu.Unlock()
		}
	})
	if err != nil {
		return nil, err
	}
	topics := make([]string, 0, len(seen))
	for topic := range seen {
		if s.Keep != nil {
			keep, err := s.Keep(ctx, topic)
			if err != nil {
				return nil, fmt.Errorf("topic %q: %w", topic, err)
			}
			if !keep {
				continue
			}
		}
		topics = append(topics, topic)
	}
	slices.Sort(topics)
	return topics, nil
}

// scanKeys calls found with every key matching pattern and of type typ, on every primary or
// shard of client. found may be called from several goroutines (one per Cluster primary).
func scanKeys(ctx context.Context, client redis.UniversalClient, pattern, typ string, found func(string)) error {
	scan := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for {
			keys, next, err := c.ScanType(ctx, cursor, pattern, scanCount, typ).Result()
			if err != nil {
				return err
			}
			for _, k := range keys {
				found(k)
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
	}
	switch c := client.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return scan(ctx, node) })
	case *redis.Ring:
		return c.ForEachShard(ctx, func(ctx context.Context, shard *redis.Client) error { return scan(ctx, shard) })
	default:
		return scan(ctx, client)
	}
}

// marker is a marker key cut at its names: lits[0] name[0] lits[1] name[1] ... lits[n].
type marker struct {
	build func(topic, group string) string
	lits  []string
	kinds []string // "topic" or "group", one per name
}

func newMarker(build func(topic, group string) string) (*marker, error) {
	if build == nil {
		return nil, fmt.Errorf("backendkit: TopicScan.Marker is nil")
	}
	key := build(topicMark, groupMark)
	if strings.Count(key, topicMark) != 1 || strings.Count(key, groupMark) > 1 {
		return nil, fmt.Errorf("backendkit: marker key %q must hold the topic once and the group at most once", key)
	}
	m := &marker{build: build}
	rest := key
	for {
		ti, gi := strings.Index(rest, topicMark), strings.Index(rest, groupMark)
		i, mark, kind := ti, topicMark, "topic"
		if ti < 0 || (gi >= 0 && gi < ti) {
			i, mark, kind = gi, groupMark, "group"
		}
		if i < 0 {
			m.lits = append(m.lits, rest)
			return m, nil
		}
		m.lits = append(m.lits, rest[:i])
		m.kinds = append(m.kinds, kind)
		rest = rest[i+len(mark):]
	}
}

// pattern is the SCAN MATCH pattern of the marker: each name a '*', the rest escaped.
func (m *marker) pattern() string {
	var b strings.Builder
	for i, lit := range m.lits {
		if i > 0 {
			b.WriteByte('*')
		}
		b.WriteString(EscapeGlob(lit))
	}
	return b.String()
}

// parse returns the topic of key, if key is the marker of a valid topic (and group) name.
func (m *marker) parse(key string) (string, bool) {
	names := make([]string, len(m.kinds))
	var match func(rest string, i int) bool
	match = func(rest string, i int) bool {
		if !strings.HasPrefix(rest, m.lits[i]) {
			return false
		}
		rest = rest[len(m.lits[i]):]
		if i == len(m.kinds) {
			return rest == ""
		}
		// A name that is invalid stays invalid when it grows, so stop at the first.
		for end := 1; end <= len(rest); end++ {
			if backend.ValidateName(m.kinds[i], rest[:end]) != nil {
				return false
			}
			names[i] = rest[:end]
			if match(rest[end:], i+1) {
				return true
			}
		}
		return false
	}
	if !match(key, 0) {
		return "", false
	}
	var topic, group string
	for i, kind := range m.kinds {
		if kind == "topic" {
			topic = names[i]
		} else {
			group = names[i]
		}
	}
	return topic, m.build(topic, group) == key
}

// EscapeGlob escapes the characters that Redis glob patterns (SCAN MATCH, KEYS, ACL key
// patterns) treat specially, so that s matches only itself.
func EscapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
