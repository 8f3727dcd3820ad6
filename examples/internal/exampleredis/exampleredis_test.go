package exampleredis_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/examples/internal/exampleredis"
	"github.com/relq/relq/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// Without a URL, Connect starts a private server; DeletePrefix deletes that prefix's keys
// and no other's.
func TestPrivateServerAndDeletePrefix(t *testing.T) {
	client, closeRedis, err := exampleredis.Connect(t.Context(), "")
	require.NoError(t, err)
	defer closeRedis()

	require.NoError(t, client.MSet(t.Context(), "{ex:orders}:seq", 1, "{ex:jobs}:seq", 2, "{exother:orders}:seq", 3, "ex:plain", 4).Err())
	require.NoError(t, exampleredis.DeletePrefix(t.Context(), client, "ex"))
	keys, err := client.Keys(t.Context(), "*").Result()
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"{exother:orders}:seq", "ex:plain"}, keys)
}

func TestURL(t *testing.T) {
	server := redistest.Start(t, redistest.Options{})
	client, closeRedis, err := exampleredis.Connect(t.Context(), server.URL())
	require.NoError(t, err)
	defer closeRedis()
	require.NoError(t, client.Ping(t.Context()).Err())

	_, _, err = exampleredis.Connect(t.Context(), "not-a-url")
	require.ErrorContains(t, err, "REDIS_URL")
}
