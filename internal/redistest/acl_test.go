package redistest_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/redistest"
)

// A user gets exactly its rules; one given to the server at start-up survives a restart,
// one added with ACL SETUSER does not.
func TestACLUsers(t *testing.T) {
	t.Parallel()
	boot := redistest.User{Name: "boot", Password: "pw1", Rules: []string{"~a:*", "+get", "+set"}}
	s := redistest.Start(t, redistest.Options{Args: boot.ServerArgs()})
	added := redistest.User{Name: "added", Password: "pw2", Rules: []string{"~b:*", "+get"}}
	s.AddUser(t, added)
	ctx := context.Background()

	bc := s.ClientAs(t, boot)
	require.NoError(t, bc.Set(ctx, "a:1", "x", 0).Err())
	require.ErrorContains(t, bc.Set(ctx, "b:1", "x", 0).Err(), "NOPERM")
	require.ErrorContains(t, bc.Del(ctx, "a:1").Err(), "NOPERM")
	ac := s.ClientAs(t, added)
	require.ErrorIs(t, ac.Get(ctx, "b:1").Err(), redis.Nil) // allowed, and missing
	require.ErrorContains(t, ac.Set(ctx, "b:1", "x", 0).Err(), "NOPERM")

	require.NoError(t, s.Restart())
	require.NoError(t, bc.Set(ctx, "a:2", "x", 0).Err())
	require.ErrorContains(t, ac.Get(ctx, "b:1").Err(), "WRONGPASS")
}
