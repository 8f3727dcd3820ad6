package human_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relq/relq/internal/human"
)

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", -1234567: "-1,234,567", 100000: "100,000"} {
		require.Equal(t, want, human.Thousands(n), "%d", n)
	}
}
