package backendkit_test

import (
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/relq/relq/internal/backendkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A lane is held by one call at a time, however many calls run at once, and its tokens go
// on from one call to the next: a resend can only ever meet its own call's record.
func TestLanesAreNeverShared(t *testing.T) {
	t.Parallel()
	l := backendkit.NewLanes()
	const goroutines, calls = 16, 200
	var (
		mu     sync.Mutex
		held   = map[int]bool{}
		tokens = map[string]bool{}
		wg     sync.WaitGroup
	)
	for range goroutines {
		wg.Go(func() {
			for range calls {
				n, token := l.Take()
				field := l.Field(n)
				mu.Lock()
				assert.False(t, held[n], "lane %d taken while held", n)
				held[n] = true
				assert.False(t, tokens[field+"/"+token], "token %s given twice on lane %d", token, n)
				tokens[field+"/"+token] = true
				mu.Unlock()
				runtime.Gosched() // the call runs: others take lanes meanwhile
				mu.Lock()
				held[n] = false
				mu.Unlock()
				l.Free(n)
			}
		})
	}
	wg.Wait()
	require.Len(t, tokens, goroutines*calls)
	lanes := map[string]bool{}
	for k := range tokens {
		field, _, _ := strings.Cut(k, "/")
		lanes[field] = true
	}
	require.LessOrEqual(t, len(lanes), goroutines, "no more lanes than calls at once")
}

// A lane's first call gets token "1" (the one that sweeps idle records); a freed lane is
// taken again before a new one is made, with the next token.
func TestLaneTokensGoOn(t *testing.T) {
	t.Parallel()
	l := backendkit.NewLanes()
	a, ta := l.Take()
	b, tb := l.Take()
	require.NotEqual(t, a, b)
	require.Equal(t, "1", ta)
	require.Equal(t, "1", tb)
	l.Free(a)
	again, token := l.Take()
	require.Equal(t, a, again)
	require.Equal(t, "2", token)
}

// Two backend values never share a lane's field, so their records cannot be taken for each
// other's.
func TestLaneFieldsAreTheInstancesOwn(t *testing.T) {
	t.Parallel()
	one, other := backendkit.NewLanes(), backendkit.NewLanes()
	require.NotEqual(t, one.Field(0), other.Field(0))
	require.True(t, strings.HasPrefix(one.Field(3), "p:"))
	require.True(t, strings.HasSuffix(one.Field(3), ":3"))
}
